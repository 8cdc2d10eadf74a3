#!/usr/bin/env python3
"""The cuda backend against PyTorch eager on the same GPU, in the same run.

usage: bench_cuda.py BUILD_DIR SEED_DIR OUT_DIR [REPEATS]

For the seed case (its real weights) and a ResNet-50-shaped network at batch 32 (random
weights, exported from the PyTorch model so both run the same numbers), with TF32 off in both
and cudnn.benchmark on (the engine: --conv-algo autotune, through cuDNN's graph API; its
legacy API and the heuristic choice are timed beside it):
  - forward time without capture (PyTorch: input copied to the GPU inside the timing, as the
    engine's run does, and also without that copy);
  - forward time with every layer copied to the host (PyTorch: forward hooks doing .cpu(),
    as people do today; the engine: its capture to pinned memory);
  - the pinned device-to-host bandwidth, and the bound 1.3 x max(compute, bytes / bandwidth);
  - the largest difference between the two frameworks' outputs (a check that they ran the
    same model).
Needs PyTorch and torchvision (the H200 machine has them under /opt/torch/.venv).
"""
import json
import os
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torchvision


def cuda_median_ms(fn, repeats):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def hooked_median_ms(model, x, repeats):
    """Every leaf module's output copied to the host by a forward hook."""
    captured = []
    hooks = [m.register_forward_hook(lambda m, i, o: captured.append(o.detach().cpu()))
             for m in model.modules() if len(list(m.children())) == 0]

    def run():
        captured.clear()
        with torch.no_grad():
            model(x)
    ms = cuda_median_ms(run, repeats)
    nbytes = sum(t.numel() * t.element_size() for t in captured)
    for h in hooks:
        h.remove()
    return ms, nbytes


# ---------- the seed case ----------

class Lenet(nn.Module):
    def __init__(self, seed):
        super().__init__()
        w = lambda layer, part: torch.from_numpy(np.load(os.path.join(
            seed, "initializer", layer, part + ".npz"))["matrix"].astype(np.float32))
        self.conv1 = nn.ConvTranspose2d(1, 6, 5)
        self.relu1 = nn.ReLU()
        self.maxpool1 = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5, stride=(7, 5))
        self.relu2 = nn.ELU(alpha=0.1)
        self.maxpool2 = nn.MaxPool2d(2, 2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(16, 120)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(120, 84)
        self.output = nn.Linear(84, 10)
        with torch.no_grad():
            for mod, layer in ((self.conv1, "conv1_mutated"), (self.conv2, "conv2_mutated"),
                               (self.fc1, "linear1_mutated"), (self.fc2, "linear2_mutated"),
                               (self.output, "tail_fc")):
                mod.weight.copy_(w(layer, "weight"))
                mod.bias.copy_(w(layer, "bias"))

    def forward(self, x):
        x = self.maxpool1(self.relu1(self.conv1(x)))
        x = self.maxpool2(self.relu2(self.conv2(x)))
        x = self.relu3(self.fc1(self.flatten(x)))
        return self.output(torch.floor(self.fc2(x)))


# ---------- ResNet-50, exported to the engine's JSON format ----------

class Exporter:
    def __init__(self, folder):
        self.folder = folder
        self.weights = []
        self.nodes = []

    def weight(self, name, tensor):
        np.save(os.path.join(self.folder, name + ".npy"), tensor.detach().cpu().numpy())
        self.weights.append({"name": name, "file": name + ".npy", "dtype": "float32"})
        return name

    def node(self, name, op, inputs, **attrs):
        self.nodes.append({"name": name, "op": op, "inputs": inputs, "attrs": attrs})
        return name

    def conv_bn(self, prefix, x, conv, bn, relu):
        w = self.weight(prefix + ".conv.weight", conv.weight)
        p = conv.padding[0]
        y = self.node(prefix + ".conv", "Conv", [x, w], strides=list(conv.stride),
                      pads=[p, p, p, p], dilations=list(conv.dilation), group=conv.groups)
        parts = [self.weight(prefix + ".bn." + n, t) for n, t in
                 (("scale", bn.weight), ("bias", bn.bias), ("mean", bn.running_mean),
                  ("var", bn.running_var))]
        y = self.node(prefix + ".bn", "BatchNormalization", [y] + parts, epsilon=bn.eps)
        return self.node(prefix + ".relu", "Relu", [y]) if relu else y

    def resnet(self, model):
        x = self.conv_bn("stem", "input", model.conv1, model.bn1, True)
        x = self.node("maxpool", "MaxPool", [x], kernel_shape=[3, 3], strides=[2, 2],
                      pads=[1, 1, 1, 1])
        for li, layer in enumerate((model.layer1, model.layer2, model.layer3, model.layer4)):
            for bi, blk in enumerate(layer):
                p = "layer%d.%d" % (li + 1, bi)
                y = self.conv_bn(p + ".a", x, blk.conv1, blk.bn1, True)
                y = self.conv_bn(p + ".b", y, blk.conv2, blk.bn2, True)
                y = self.conv_bn(p + ".c", y, blk.conv3, blk.bn3, False)
                short = (self.conv_bn(p + ".down", x, blk.downsample[0], blk.downsample[1], False)
                         if blk.downsample is not None else x)
                y = self.node(p + ".add", "Add", [y, short])
                x = self.node(p + ".relu", "Relu", [y])
        x = self.node("avgpool", "GlobalAveragePool", [x])
        x = self.node("flatten", "Flatten", [x], axis=1)
        w = self.weight("fc.weight", model.fc.weight)
        b = self.weight("fc.bias", model.fc.bias)
        x = self.node("fc", "Gemm", [x, w, b], transB=1)
        model_json = {"format": "gpudiff-model", "version": 1, "name": "resnet50-shaped",
                      "inputs": [{"name": "input", "dtype": "float32", "shape": [-1, 3, 224, 224]}],
                      "outputs": [x], "weights": self.weights, "nodes": self.nodes}
        path = os.path.join(self.folder, "model.json")
        with open(path, "w") as f:
            json.dump(model_json, f)
        return path


def resnet50(out_dir):
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    with torch.no_grad():  # inference statistics that are not the trivial 0 and 1
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    model.eval()
    folder = os.path.join(out_dir, "resnet50")
    os.makedirs(folder, exist_ok=True)
    path = Exporter(folder).resnet(model)
    x = torch.randn(32, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    np.save(os.path.join(folder, "input.npy"), x.numpy())
    return model, x, path, os.path.join(folder, "input.npy")


def engine(build, model_path, input_path, key, repeats, save, how="autotune", api="graph"):
    cmd = [os.path.join(build, "tests", "bench", "bench_gpu"), model_path, input_path, key or "-",
           str(repeats), "--tf32", "off", "--conv-algo", how, "--conv-api", api, "--save", save]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    vals = {}
    for line in out.splitlines():
        k, _, v = line.partition(" ")
        vals[k] = v
    return vals


def main():
    build, seed, out_dir = sys.argv[1:4]
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    os.makedirs(out_dir, exist_ok=True)
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    rows = []
    cases = []
    profiles = []
    uploads = []
    lenet = Lenet(seed).cuda().eval()
    x_seed = torch.from_numpy(np.load(os.path.join(seed, "input.npz"))["inp"])
    # The model file with its weights folder made absolute, wherever the case lives.
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                           "models", "lenet-11-821.json")) as f:
        seed_model = json.load(f)
    seed_model["weights_dir"] = os.path.join(os.path.abspath(seed), "initializer")
    seed_path = os.path.join(out_dir, "lenet-11-821.json")
    with open(seed_path, "w") as f:
        json.dump(seed_model, f)
    cases.append(("seed", lenet, x_seed, seed_path, os.path.join(seed, "input.npz"), "inp"))
    model, x, path, xpath = resnet50(out_dir)
    cases.append(("resnet50", model.cuda(), x, path, xpath, None))
    for name, mod, x_host, model_path, input_path, key in cases:
        x_dev = x_host.cuda()
        with torch.no_grad():
            t_dev = cuda_median_ms(lambda: mod(x_dev), repeats)
            t_h2d = cuda_median_ms(lambda: mod(x_host.cuda()), repeats)
            ref = mod(x_dev).cpu().numpy()
        t_hook, hook_bytes = hooked_median_ms(mod, x_dev, max(3, repeats // 4))
        saved = os.path.join(out_dir, name + "-output.npy")
        e = engine(build, model_path, input_path, key, repeats, saved)
        out = np.load(saved)
        fwd, cap = float(e["forward_ms"]), float(e["capture_ms"])
        uploads.append((name, float(e["input_upload_ms"]), fwd))
        nbytes, bw = int(e["captured_bytes"]), float(e["pinned_d2h_gbps"])
        bound = 1.3 * max(fwd, nbytes / (bw * 1e9) * 1e3)
        rows.append((name, t_dev, t_h2d, fwd, fwd / t_h2d, t_hook, hook_bytes, cap, nbytes, bw,
                     bound, cap / bound, float(np.max(np.abs(out - ref)) / np.max(np.abs(ref)))))
        ops = sorted(((float(v), k[6:]) for k, v in e.items() if k.startswith("op_ms_")),
                     reverse=True)
        heur = engine(build, model_path, input_path, key, repeats, saved, "heuristic")
        legacy = engine(build, model_path, input_path, key, repeats, saved, "autotune", "legacy")
        print("%s: engine forward with autotune %.3f ms, with cuDNN's heuristic choice %.3f ms, "
              "with autotune through cuDNN's legacy API %.3f ms"
              % (name, fwd, float(heur["forward_ms"]), float(legacy["forward_ms"])))
        for k, v in sorted(e.items()):
            if k.startswith("algo_"):
                print("%s: algorithm %s" % (name, v))
        profiles.append((name, ops, torch_kernels(mod, x_dev)))
    print("GPU: %s   cuDNN (engine): %s   PyTorch %s (cuDNN %s)" % (
        torch.cuda.get_device_name(), e.get("cudnn"), torch.__version__,
        torch.backends.cudnn.version()))
    print("%-9s %10s %10s %10s %8s | %10s %10s %10s %10s %8s %10s %8s | %9s" % (
        "model", "torch ms", "torch+h2d", "engine ms", "ratio", "hooks ms", "hook MB",
        "capture ms", "cap MB", "GB/s", "bound ms", "cap/bnd", "rel diff"))
    for r in rows:
        print("%-9s %10.3f %10.3f %10.3f %8.3f | %10.2f %10.1f %10.2f %10.1f %8.1f %10.2f %8.3f | %9.2e"
              % (r[0], r[1], r[2], r[3], r[4], r[5], r[6] / 1e6, r[7], r[8] / 1e6, r[9], r[10],
                 r[11], r[12]))
    for (name, up, fwd), r in zip(uploads, rows):
        print("%s: the engine's run includes the input's upload, %.3f ms alone; without it the "
              "engine takes %.3f ms, %.3f x PyTorch with the input already on the GPU"
              % (name, up, fwd - up, (fwd - up) / r[1]))
    for name, ops, (kernels, total) in profiles:
        print("\n%s: engine device time by op (ms): %s" % (
            name, ", ".join("%s %.3f" % (k, v) for v, k in ops)))
        print("%s: PyTorch device time %.3f ms, top kernels:" % (name, total))
        for ms, key in kernels:
            print("   %8.3f  %s" % (ms, key[:110]))


def torch_kernels(mod, x, top=8):
    """PyTorch's GPU time per kernel name over one forward, the top ones, in ms."""
    from torch.profiler import ProfilerActivity, profile
    with torch.no_grad(), profile(activities=[ProfilerActivity.CUDA]) as prof:
        mod(x)
        torch.cuda.synchronize()
    rows = [(e.device_time_total / 1e3, e.key) for e in prof.key_averages()
            if e.device_time_total > 0]
    rows.sort(reverse=True)
    return rows[:top], sum(r[0] for r in rows)


if __name__ == "__main__":
    main()
