#!/usr/bin/env python3
"""The cuda backend at framework speed (issue 17): the engine against PyTorch eager on the
same GPU in the same run. tests/bench/gpu_cudnn.sh runs it with the H200 machine's Python
(/opt/torch/.venv/bin/python3: torch, torchvision, onnx); random weights (no network).

  gpu_cudnn.py prepare --work DIR [--models M,..] [--batches B,..]
      exports the models: ResNet-50 to the engine's JSON format (bench_cuda.py's exporter,
      batch normalization kept), vit_b_16 and mobilenet_v3_small with torch.onnx.export as
      gpu_onnx.py does (BatchNormalization folded first), one file per batch size; inputs.
  gpu_cudnn.py det --build DIR --work DIR
      two deterministic runs of mobilenet_v3_small and ResNet-50 (batch 8) through
      gpudiff-agent, diffed: every layer bitwise identical.
  gpu_cudnn.py bench --build DIR --work DIR --seed DIR [--models] [--batches] [--repeats N]
      for every model, batch, TF32 off/on and heuristic/autotune/deterministic: the median
      forward time of the engine (tests/bench/bench_gpu_matrix: gd_session_forward on a
      staged input, wall clock) and of PyTorch eager (input on the GPU, torch.no_grad(),
      cudnn.benchmark for autotune, cudnn.deterministic for deterministic, allow_tf32 for
      TF32 on, for convolutions and matmuls as the engine's --tf32), the ratio against the
      target (1.05 at batch 8 and 32, 1.2 at batch 1); the legacy API beside the graph API
      at the largest batch with autotune; the output against PyTorch's; device time per op
      (engine, from a captured run) against PyTorch's kernels (profiler); the captured run
      against its bound for the seed case and ResNet-50.
Everything that fails is reported with its error and the rest goes on; the summary comes
last. Machine-readable results go to WORK/gpu_cudnn.json.
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

MODES = ("heuristic", "autotune", "deterministic")
TARGET = {1: 1.2}       # batch 1; every other batch 1.05
TARGET_DEFAULT = 1.05
CAPTURE_TARGET = 1.1    # captured run / its bound


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def rel(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    scale = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(a - b))) / scale


# ---------- models ----------

def torch_model(name):
    """The PyTorch module the engine's file holds, in eval mode, on the CPU."""
    import torch
    if name == "resnet50":
        import torchvision
        torch.manual_seed(0)
        model = torchvision.models.resnet50(weights=None)
        with torch.no_grad():  # bench_cuda.py's statistics, so the export matches
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.1, 0.1)
                    m.running_mean.uniform_(-0.1, 0.1)
                    m.running_var.uniform_(0.5, 1.5)
        return model.eval()
    import gpu_onnx
    model, _ = gpu_onnx.build_model(name)
    return model.eval()


def model_input(batch):
    import torch
    return torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(1))


def paths(work, name, batch):
    d = os.path.join(work, name)
    ext = "json" if name == "resnet50" else "onnx"
    model = os.path.join(d, "model.json") if name == "resnet50" else \
        os.path.join(d, "model-b%d.onnx" % batch)
    return d, model, os.path.join(d, "input-b%d.npy" % batch)


def prepare(args):
    import torch
    import bench_cuda
    import gpu_onnx
    torch.set_num_threads(max(1, (os.cpu_count() or 4) // 2))
    status = {}
    for name in args.models:
        t0 = time.perf_counter()
        try:
            d, _, _ = paths(args.work, name, 1)
            os.makedirs(d, exist_ok=True)
            model = torch_model(name)
            if name == "resnet50":
                bench_cuda.Exporter(d).resnet(model)
            for b in args.batches:
                _, mpath, ipath = paths(args.work, name, b)
                x = model_input(b)
                np.save(ipath, x.numpy())
                if name != "resnet50":
                    exporter, opset = gpu_onnx.export(model, x, mpath)
                    log("%s batch %d: %s opset %d, %.0f MB" % (
                        name, b, exporter, opset, os.path.getsize(mpath) / 1e6))
            status[name] = "ok (%.0f s)" % (time.perf_counter() - t0)
        except Exception as e:  # noqa: BLE001 - report it, go on with the others
            traceback.print_exc()
            status[name] = "failed: %s" % e
        log("prepare %s: %s" % (name, status[name]))
    with open(os.path.join(args.work, "prepared.json"), "w") as f:
        json.dump(status, f)
    print(json.dumps(status))
    return 0 if all(v.startswith("ok") for v in status.values()) else 1


# ---------- timing ----------

def set_torch_mode(tf32, mode):
    import torch
    torch.backends.cudnn.allow_tf32 = tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.benchmark = mode == "autotune"
    torch.backends.cudnn.deterministic = mode == "deterministic"


def torch_median_ms(fn, repeats, warmup=3):
    import torch
    for _ in range(warmup):
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


def engine_matrix(build, model, inp, settings, repeats, save=None, timeout=300):
    cmd = [os.path.join(build, "tests", "bench", "bench_gpu_matrix"), model, inp,
           "--repeats", str(repeats)]
    if save:
        cmd += ["--save", save]
    cmd += settings
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    rows, algos, errors = {}, {}, {}
    for line in p.stdout.splitlines():
        f = line.split()
        if not f:
            continue
        if f[0] == "row":
            rows[f[1]] = {"wall_ms": float(f[3]), "device_ms": float(f[5]),
                          "first_ms": float(f[7])}
        elif f[0] == "algos":
            algos[f[1]] = " ".join(f[2:])
        elif f[0] == "error":
            errors[f[1]] = " ".join(f[2:])
    if p.returncode != 0 and not errors:
        errors["*"] = "exit %d: %s" % (p.returncode, p.stderr.strip()[-400:])
    log("  engine %s: %.1f s, %d rows, %d errors" % (os.path.basename(model),
                                                     time.perf_counter() - t0, len(rows),
                                                     len(errors)))
    for k, v in errors.items():
        log("  engine error %s: %s" % (k, v))
    return rows, algos, errors


def bench_gpu(build, model, inp, key, repeats, how, api="graph", tf32="off", save=None,
              timeout=300):
    cmd = [os.path.join(build, "tests", "bench", "bench_gpu"), model, inp, key or "-",
           str(repeats), "--tf32", tf32, "--conv-algo", how, "--conv-api", api]
    if save:
        cmd += ["--save", save]
    # the default 1 GiB pinned ring, whatever the machine's environment says
    env = dict(os.environ, GPUDIFF_CUDA_PINNED_MB="1024")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode != 0:
        raise RuntimeError("bench_gpu: exit %d: %s" % (p.returncode, p.stderr.strip()[-400:]))
    vals = {}
    for line in p.stdout.splitlines():
        k, _, v = line.partition(" ")
        vals[k] = v
    return vals


# ---------- per-op device time ----------

def kernel_class(name):
    n = name.lower()
    if any(w in n for w in ("conv", "fprop", "dgrad", "implicit_gemm", "winograd", "fft",
                            "depthwise", "implicit_convolve")):
        return "conv"
    if any(w in n for w in ("gemm", "gemv", "cutlass", "cublas", "matmul", "xmma")):
        return "gemm"
    if any(w in n for w in ("batch_norm", "bn_fw", "batchnorm", "layer_norm", "layernorm")):
        return "norm"
    if any(w in n for w in ("softmax", "attention", "fmha", "flash")):
        return "attention/softmax"
    if "pool" in n or "reduce" in n:
        return "pool/reduce"
    if "copy" in n or "transpose" in n or "cat" in n:
        return "copy"
    if "elementwise" in n or "vectorized" in n or "unrolled" in n:
        return "elementwise"
    return "other"


def torch_kernels(mod, x, top=12):
    import torch
    from torch.profiler import ProfilerActivity, profile
    with torch.no_grad():
        mod(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            mod(x)
            torch.cuda.synchronize()
    rows = [(e.device_time_total / 1e3, e.count, e.key) for e in prof.key_averages()
            if e.device_time_total > 0]
    rows.sort(reverse=True)
    classes = {}
    for ms, _, key in rows:
        c = kernel_class(key)
        classes[c] = classes.get(c, 0.0) + ms
    return rows[:top], sum(r[0] for r in rows), classes


# ---------- the benchmark ----------

def bench(args):
    import torch
    res = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "torch_cudnn": torch.backends.cudnn.version(),
           "benchmark_limit": getattr(torch.backends.cudnn, "benchmark_limit", None),
           "rows": [], "legacy": [], "outputs": [], "ops": [], "capture": [], "errors": []}
    log("GPU %s, PyTorch %s (cuDNN %s), cudnn.benchmark_limit %s" % (
        res["gpu"], res["torch"], res["torch_cudnn"], res["benchmark_limit"]))
    settings = ["%s:%s" % (t, m) for t in ("off", "on") for m in args.modes]
    big = max(args.batches)
    for name in args.models:
        try:
            mod = torch_model(name).cuda()
        except Exception as e:  # noqa: BLE001
            res["errors"].append("%s: model: %s" % (name, e))
            continue
        for b in args.batches:
            _, mpath, ipath = paths(args.work, name, b)
            if not (os.path.exists(mpath) and os.path.exists(ipath)):
                res["errors"].append("%s batch %d: not prepared" % (name, b))
                continue
            log("%s batch %d" % (name, b))
            save = os.path.join(args.work, "%s-b%d-engine.npy" % (name, b))
            extra = ["%s:autotune:legacy" % t for t in ("off", "on")] \
                if b == big and not args.no_legacy else []
            try:
                rows, algos, errors = engine_matrix(args.build, mpath, ipath, settings + extra,
                                                    args.repeats, save)
            except Exception as e:  # noqa: BLE001
                rows, algos, errors = {}, {}, {"*": str(e)}
            for k, v in errors.items():
                res["errors"].append("%s batch %d %s: %s" % (name, b, k, v))
            x = torch.from_numpy(np.load(ipath)).cuda()
            for s in settings:
                tf32, mode = s.split(":")
                set_torch_mode(tf32 == "on", mode)
                with torch.no_grad():
                    t = torch_median_ms(lambda: mod(x), args.repeats)
                e = rows.get(s)
                ratio = e["wall_ms"] / t if e else None
                target = TARGET.get(b, TARGET_DEFAULT)
                res["rows"].append({"model": name, "batch": b, "tf32": tf32, "mode": mode,
                                    "engine_ms": e["wall_ms"] if e else None,
                                    "engine_device_ms": e["device_ms"] if e else None,
                                    "engine_first_ms": e["first_ms"] if e else None,
                                    "torch_ms": t, "ratio": ratio, "target": target,
                                    "algos": algos.get(s, "")})
            for s in extra:
                e = rows.get(s)
                g = rows.get(s.rsplit(":", 1)[0])
                res["legacy"].append({"model": name, "batch": b, "setting": s,
                                      "legacy_ms": e["wall_ms"] if e else None,
                                      "graph_ms": g["wall_ms"] if g else None,
                                      "algos": algos.get(s, "")})
            # the output against PyTorch's, TF32 off (the engine saved its first setting's)
            try:
                set_torch_mode(False, "heuristic")
                with torch.no_grad():
                    ref = mod(x).float().cpu().numpy()
                res["outputs"].append({"model": name, "batch": b,
                                       "rel": rel(np.load(save), ref), "bound": 1e-3})
            except Exception as e:  # noqa: BLE001
                res["errors"].append("%s batch %d output: %s" % (name, b, e))
        # device time per op at the largest batch, TF32 off, autotune
        _, mpath, ipath = paths(args.work, name, big)
        try:
            if args.no_ops:
                raise RuntimeError("left out (--no-ops)")
            v = bench_gpu(args.build, mpath, ipath, None, 3, "autotune")
            ops = sorted(((float(val), k[6:]) for k, val in v.items() if k.startswith("op_ms_")),
                         reverse=True)
            set_torch_mode(False, "autotune")
            x = torch.from_numpy(np.load(ipath)).cuda()
            kernels, total, classes = torch_kernels(mod, x)
            res["ops"].append({"model": name, "batch": big, "engine_ops": ops,
                               "engine_algos": [v[k] for k in sorted(v) if k.startswith("algo_")],
                               "torch_total_ms": total, "torch_kernels": kernels,
                               "torch_classes": classes})
        except Exception as e:  # noqa: BLE001
            res["errors"].append("%s per-op: %s" % (name, e))
        del mod
        torch.cuda.empty_cache()
    capture(args, res)
    with open(os.path.join(args.work, "gpu_cudnn.json"), "w") as f:
        json.dump(res, f, indent=1)
    summary(res)
    return 0


def capture(args, res):
    """The captured run against 1.3 x max(forward, bytes / bandwidth), graph API, autotune."""
    cases = []
    seed_json = os.path.join(HERE, "..", "fixtures", "models", "lenet-11-821.json")
    if args.seed and os.path.exists(seed_json):
        with open(seed_json) as f:
            m = json.load(f)
        m["weights_dir"] = os.path.join(os.path.abspath(args.seed), "initializer")
        path = os.path.join(args.work, "lenet-11-821.json")
        with open(path, "w") as f:
            json.dump(m, f)
        cases.append(("seed", path, os.path.join(args.seed, "input.npz"), "inp"))
    if "resnet50" in args.models:
        _, mpath, ipath = paths(args.work, "resnet50", max(args.batches))
        cases.append(("resnet50 b%d" % max(args.batches), mpath, ipath, None))
    for name, mpath, ipath, key in cases:
        try:
            v = bench_gpu(args.build, mpath, ipath, key, args.repeats, "autotune")
            res["engine_cudnn"] = v.get("cudnn")
            fwd, cap = float(v["forward_ms"]), float(v["capture_ms"])
            nbytes, bw = int(v["captured_bytes"]), float(v["pinned_d2h_gbps"])
            copy_ms = nbytes / (bw * 1e9) * 1e3
            bound = 1.3 * max(fwd, copy_ms)
            floor = float(v["input_upload_ms"]) + float(v["first_layer_ms"]) + copy_ms
            res["capture"].append({"case": name, "forward_ms": fwd, "capture_ms": cap,
                                   "bytes": nbytes, "gbps": bw, "bound_ms": bound,
                                   "ratio": cap / bound, "upload_ms": float(v["input_upload_ms"]),
                                   "first_layer_ms": float(v["first_layer_ms"]),
                                   "copy_ms": copy_ms, "floor_ms": floor})
        except Exception as e:  # noqa: BLE001
            res["errors"].append("capture %s: %s" % (name, e))


def summary(res):
    print("GPU %s; PyTorch %s with cuDNN %s; cudnn.benchmark_limit %s; the engine's cuDNN %s" % (
        res["gpu"], res["torch"], res["torch_cudnn"], res["benchmark_limit"],
        res.get("engine_cudnn")))
    print("\nengine / PyTorch eager, forward with the input on the GPU, median wall ms:")
    print("%-19s %5s %4s %-13s %9s %9s %7s %6s %s" % ("model", "batch", "tf32", "mode",
                                                     "engine", "torch", "ratio", "target", ""))
    met = total = 0
    for r in res["rows"]:
        ok = r["ratio"] is not None and r["ratio"] <= r["target"]
        total += 1
        met += ok
        print("%-19s %5d %4s %-13s %9s %9.3f %7s %6.2f %s" % (
            r["model"], r["batch"], r["tf32"], r["mode"],
            "%.3f" % r["engine_ms"] if r["engine_ms"] is not None else "-", r["torch_ms"],
            "%.3f" % r["ratio"] if r["ratio"] is not None else "-", r["target"],
            "ok" if ok else "MISSED"))
    print("targets met: %d of %d rows" % (met, total))
    if res["legacy"]:
        print("\ngraph API against the legacy API (autotune, largest batch), engine wall ms:")
        for r in res["legacy"]:
            print("  %-19s b%-3d %-22s graph %s legacy %s" % (
                r["model"], r["batch"], r["setting"], r["graph_ms"], r["legacy_ms"]))
    print("\nchosen engine configs (count:config) per row:")
    for r in res["rows"]:
        if r["mode"] == "autotune" or r["batch"] == 1:
            print("  %s b%d %s:%s  %s" % (r["model"], r["batch"], r["tf32"], r["mode"],
                                          r["algos"][:300]))
    print("\noutputs against PyTorch's (TF32 off), max|a-b|/max|b|:")
    for o in res["outputs"]:
        print("  %-19s b%-3d %.2e (bound %.0e) %s" % (o["model"], o["batch"], o["rel"],
                                                     o["bound"],
                                                     "ok" if o["rel"] <= o["bound"] else "FAIL"))
    for o in res["ops"]:
        print("\n%s batch %d, TF32 off, autotune: engine device time by op (ms): %s" % (
            o["model"], o["batch"], ", ".join("%s %.3f" % (k, v) for v, k in o["engine_ops"])))
        print("  PyTorch %.3f ms of kernels; by class: %s" % (
            o["torch_total_ms"], ", ".join("%s %.3f" % kv for kv in
                                          sorted(o["torch_classes"].items(),
                                                 key=lambda kv: -kv[1]))))
        for ms, count, key in o["torch_kernels"]:
            print("   %8.3f %4d  %s" % (ms, count, key[:100]))
        for a in o["engine_algos"][:12]:
            print("  engine conv: %s" % a)
    print("\ncaptured run against 1.3 x max(forward, bytes / bandwidth):")
    for c in res["capture"]:
        print("  %-12s forward %.3f ms, capture %.3f ms, %.1f MB at %.1f GB/s, bound %.3f ms: "
              "%.3f x (target %.1f) %s; floor = upload %.3f + first layer %.3f + copies %.3f "
              "= %.3f ms" % (c["case"], c["forward_ms"], c["capture_ms"], c["bytes"] / 1e6,
                             c["gbps"], c["bound_ms"], c["ratio"], CAPTURE_TARGET,
                             "ok" if c["ratio"] <= CAPTURE_TARGET else "MISSED", c["upload_ms"],
                             c["first_layer_ms"], c["copy_ms"], c["floor_ms"]))
    if res["errors"]:
        print("\nerrors:")
        for e in res["errors"]:
            print("  " + e[:400])


def det_twice(args):
    """Two deterministic runs (graph API) of each prepared model through gpudiff-agent at
    batch 8: every layer bitwise identical, the same engine configs."""
    import tempfile
    agent = os.path.join(args.build, "gpudiff-agent")
    failed = 0
    tmp = tempfile.mkdtemp(prefix="gpu_cudnn-det.")
    for name in ("mobilenet_v3_small", "resnet50"):
        b = 8 if 8 in args.batches else min(args.batches)
        _, mpath, ipath = paths(args.work, name, b)
        if not (os.path.exists(mpath) and os.path.exists(ipath)):
            print("%s: not prepared" % name)
            continue
        outs = []
        try:
            for i in (1, 2):
                out = os.path.join(tmp, "%s-%d" % (name, i))
                subprocess.run([agent, "run", "--model", mpath, "--input", ipath, "--backend",
                                "cuda", "--conv-algo", "deterministic", "--out", out],
                               check=True, capture_output=True, text=True, timeout=120)
                outs.append(out)
            p = subprocess.run([agent, "diff", outs[0], outs[1], "--json"], capture_output=True,
                               text=True, timeout=120)
            d = json.loads(p.stdout)
            layers = d["layers"]
            bad = [l["name"] for l in layers if l["verdict"] != "identical"]
            algo = [l.get("algo", {}) for l in layers if l["op"] in ("Conv", "ConvTranspose")]
            same = all(a.get("a") == a.get("b") for a in algo)
            configs = sorted({a.get("a", "") for a in algo})
            print("%s b%d: %d layers, %d not identical %s; %d convolutions, the same engine "
                  "configs twice: %s; %d configs, first %s" % (
                      name, b, len(layers), len(bad), bad[:5], len(algo), same, len(configs),
                      configs[:3]))
            failed |= bool(bad) or not layers or not same
        except Exception as e:  # noqa: BLE001
            print("%s: FAIL %s" % (name, str(e)[-400:]))
            failed = 1
    subprocess.run(["rm", "-rf", tmp])
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("prepare", "bench", "det"))
    ap.add_argument("--build")
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed")
    ap.add_argument("--models", default="resnet50,vit_b_16,mobilenet_v3_small")
    ap.add_argument("--batches", default="1,8,32")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--no-ops", action="store_true", help="leave out the per-op comparison")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="the engine's conv algorithm choices to time (bench)")
    ap.add_argument("--no-legacy", action="store_true",
                    help="leave out the legacy conv API rows (bench)")
    args = ap.parse_args()
    args.modes = [m for m in args.modes.split(",") if m]
    args.models = [m for m in args.models.split(",") if m]
    args.batches = [int(b) for b in args.batches.split(",") if b]
    os.makedirs(args.work, exist_ok=True)
    if args.what == "det":
        return det_twice(args)
    return prepare(args) if args.what == "prepare" else bench(args)


if __name__ == "__main__":
    sys.exit(main())
