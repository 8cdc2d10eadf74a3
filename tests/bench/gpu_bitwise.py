#!/usr/bin/env python3
"""The models of tests/bench/gpu_bitwise.sh and PyTorch eager's time on them (the H200
machine's /opt/torch/.venv/bin/python3: torch, torchvision, onnx; random weights, no network).

  gpu_bitwise.py prepare --work DIR
      ResNet-50 in the engine's JSON format (bench_cuda.py's exporter and statistics), input
      32 x 3 x 224 x 224; vit_b_16 exported with torch.onnx.export (gpu_onnx.py's model) with
      a free batch axis, same input; GPT-2 small's shape (gpt2_export.py) at 32 x 64 tokens
      for the bitwise comparisons and at 8 x 1024 for the time, exported in float32 (the
      engine's --dtype float16 casts it as model.half() does).
  gpu_bitwise.py fixed-vit --work DIR --batches 1,7,32
      vit_b_16 exported once per batch size (shapes folded), where the engine cannot take the
      free batch of the first export.
  gpu_bitwise.py torch --work DIR [--repeats N]
      PyTorch eager on the same GPU: ResNet-50 and vit_b_16 at batch 32 in float32 (TF32 off,
      as the engine's default), GPT-2 small in float16 at 8 x 1024 (model.half()); input on the
      GPU, torch.no_grad(), the median of N timed forwards after 3 warm-ups, each closed by
      torch.cuda.synchronize(). Prints "TORCH name=... ms=..." lines.
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def vit_model():
    import gpu_onnx
    model, _ = gpu_onnx.build_model("vit_b_16")
    return model.eval()


def image_input(batch):
    import torch
    return torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(1))


def prepare(args):
    import torch
    import bench_cuda
    import gpt2_export
    import gpu_cudnn
    torch.set_num_threads(max(1, (os.cpu_count() or 4) // 2))
    w = args.work
    t0 = time.time()
    d = os.path.join(w, "resnet50")
    os.makedirs(d, exist_ok=True)
    bench_cuda.Exporter(d).resnet(gpu_cudnn.torch_model("resnet50"))
    np.save(os.path.join(d, "input.npy"), image_input(32).numpy())
    log("resnet50: %.1f s" % (time.time() - t0))
    if args.models == "resnet50":
        return 0
    t0 = time.time()
    d = os.path.join(w, "vit")
    os.makedirs(d, exist_ok=True)
    x = image_input(32)
    # not under no_grad: there nn.MultiheadAttention takes its fused fast path, which the
    # TorchScript exporter cannot write (aten::_native_multi_head_attention)
    torch.onnx.export(vit_model(), (x,), os.path.join(d, "model.onnx"), opset_version=17,
                      dynamo=False, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
                      do_constant_folding=True)
    np.save(os.path.join(d, "input.npy"), x.numpy())
    log("vit_b_16: %.1f s" % (time.time() - t0))
    for name, batch, seq in (("gpt2_cmp", 32, 64), ("gpt2_time", 8, 1024)):
        t0 = time.time()
        d = os.path.join(w, name)
        os.makedirs(d, exist_ok=True)
        inputs = gpt2_export.make_inputs("gpt2-12", batch, seq)
        model = gpt2_export.make_model("gpt2-12")
        gpt2_export.export_onnx(model, inputs, os.path.join(d, "model.onnx"))
        np.save(os.path.join(d, "input_ids.npy"), inputs[0])
        log("%s (%d x %d): %.1f s" % (name, batch, seq, time.time() - t0))
    return 0


def fixed_vit(args):
    import torch
    model = vit_model()
    for b in (int(v) for v in args.batches.split(",")):
        d = os.path.join(args.work, "vit_b%d" % b)
        os.makedirs(d, exist_ok=True)
        x = image_input(32)[:b]
        torch.onnx.export(model, (x,), os.path.join(d, "model.onnx"), opset_version=17,
                          dynamo=False, input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
        np.save(os.path.join(d, "input.npy"), x.numpy())
        log("vit_b_16 batch %d exported" % b)
    return 0


def torch_times(args):
    import torch
    import bench_cuda
    import gpt2_export
    import gpu_cudnn
    median_ms = bench_cuda.cuda_median_ms
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = "cuda"
    rows = []
    want = args.models.split(",")
    for name, build in (("resnet50", lambda: gpu_cudnn.torch_model("resnet50")),
                        ("vit_b_16", vit_model)):
        if name not in want:
            continue
        model = build().to(dev)
        x = image_input(32).to(dev)
        with torch.no_grad():
            ms = median_ms(lambda: model(x), args.repeats)
        rows.append((name, 32, "float32", ms))
        del model
    if "gpt2" in want:
        model = gpt2_export.make_model("gpt2-12").half().to(dev)
        ids = torch.from_numpy(gpt2_export.make_inputs("gpt2-12", 8, 1024)[0]).to(dev)
        with torch.no_grad():
            ms = median_ms(lambda: model(ids), args.repeats)
        rows.append(("gpt2", 8, "float16", ms))
    for name, batch, dtype, ms in rows:
        print("TORCH name=%s batch=%d dtype=%s ms=%.3f" % (name, batch, dtype, ms), flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=["prepare", "fixed-vit", "torch"])
    ap.add_argument("--work", required=True)
    ap.add_argument("--batches", default="1,7,32")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--models", default="resnet50,vit_b_16,gpt2",
                    help="prepare: resnet50 alone, or all; torch: which to time")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    return {"prepare": prepare, "fixed-vit": fixed_vit, "torch": torch_times}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
