#!/usr/bin/env python3
"""gpu_half.py: PyTorch's side of tests/bench/gpu_half.sh and gpu_speed.sh, on the GPU
machine (torch, /opt/torch/.venv/bin/python3).

    gpu_half.py speed NAME [--batch B] [--seq T] [--dtype D] [--tf32 on|off] [--save PREFIX]
        PyTorch eager's forward of configuration NAME (gpt2_export.py's weights) in D, CUDA
        events around it, median of --repeats after a warm-up; the inputs it ran saved as
        PREFIX.<input>.npy for the engine and, TF32 off, its output as PREFIX.torch_out.npy
    gpu_half.py compare X.npy REF.npy [--bound B]
        max |x - ref| / max |ref|, within B (default 1e-3)
    gpu_half.py check NAME IDS.npy GD_FLOAT16.npy GD_BFLOAT16.npy [--json OUT.json]

builds the model of gpt2_export.py's configuration NAME (the weights of the exported file:
same seed, drawn on the CPU), and for each format F in float16 and bfloat16:
  - PyTorch's forward in F on the GPU (model.half() / model.bfloat16()), timed: CUDA events
    around the forward, median of 5 after a warm-up;
  - the truth: the same rounded weights in float64 (model.half().double()), the exact
    computation of the model gpudiff and PyTorch both compute in F;
  - gpudiff's output in F (bench_half's .npy) against both. Medians are over every 97th
    element (a 412e6-element output sorts slowly).

The float16 bound. A float16 implementation that computes each op in float32 and stores its
result rounded (PyTorch's and gpudiff's arithmetic) is within its own rounding error e of the
truth; that error has no a-priori bound useful for a 12- or 48-layer network, but PyTorch
measures it: e_pt = max |pt - truth| / max |truth|. gpudiff passes when its own error
e_gd <= 2 e_pt, the same for the median, so that |gd - pt| <= e_gd + e_pt <= 3 e_pt:
gpudiff computes what a float16 framework computes, to within a factor 2 of that framework's
own accuracy. A wrong op, a reduction in the half format where PyTorch keeps float32, or
weights rounded differently would show as e_gd far above e_pt. The summary prints e_gd,
e_pt, |gd - pt|, the argmax agreement of the last axis and the times.
"""
import argparse
import copy
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_export  # noqa: E402


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def load_npy_gpu(path, torch):
    """A gpudiff output (.npy float16, or bfloat16 as a 2-byte void) as a float32 CUDA tensor."""
    a = np.load(path, mmap_mode="r")
    if a.dtype.kind == "V" or a.dtype == np.uint16:
        u = torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).cuda().to(torch.int32)
        return ((u & 0xFFFF) << 16).view(torch.float32)
    return torch.from_numpy(np.ascontiguousarray(a)).cuda().float()


def timed_forward(model, args, torch, repeats=5):
    with torch.no_grad():
        y = model(*args)  # warm-up
        times = []
        for _ in range(repeats):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            y = model(*args)
            e.record()
            torch.cuda.synchronize()
            times.append(s.elapsed_time(e))
    return y, sorted(times)[len(times) // 2]


def check(a):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ids = torch.from_numpy(np.load(a.ids)).cuda()
    model = gpt2_export.make_model(a.name, a.seed, "cpu")
    results = {"model": a.name, "shape": list(ids.shape),
               "allow_fp16_reduced_precision_reduction":
                   torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
               "allow_bf16_reduced_precision_reduction":
                   torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction}
    ok = True
    for fmt, path in (("float16", a.gd_float16), ("bfloat16", a.gd_bfloat16)):
        tdt = torch.float16 if fmt == "float16" else torch.bfloat16
        # a copy of the float32 module each time, so each format rounds the float32 weights
        # once, as gpudiff's --dtype casts the float32 file
        m = copy.deepcopy(model).to(device="cuda", dtype=tdt)
        t0 = time.time()
        pt, pt_ms = timed_forward(m, (ids,), torch)
        pt = pt.float()
        with torch.no_grad():
            truth = m.double()(ids)  # the same rounded weights, in float64
        del m
        torch.cuda.empty_cache()
        scale = truth.abs().max().item()
        r = {"torch_ms": pt_ms, "torch_s": time.time() - t0}
        if not os.path.exists(path):
            r["error"] = "no gpudiff output %s" % path
            results[fmt] = r
            ok = False
            log("%s: %s" % (fmt, r["error"]))
            continue
        gd = load_npy_gpu(path, torch)
        if tuple(gd.shape) != tuple(truth.shape):
            r["error"] = "gpudiff's output is %s, torch's %s" % (tuple(gd.shape),
                                                                   tuple(truth.shape))
            results[fmt] = r
            ok = False
            continue

        def err(x):
            d = (x.double() - truth).abs() / scale
            return d.max().item(), d.flatten()[::97].median().item()

        e_gd, m_gd = err(gd)
        e_pt, m_pt = err(pt)
        d_max = ((gd - pt).abs().max().item()) / scale
        agree = (gd.argmax(-1) == pt.argmax(-1)).double().mean().item()
        agree_truth = (gd.argmax(-1) == truth.argmax(-1)).double().mean().item()
        nan_gd = int(torch.isnan(gd).sum().item())
        passed = nan_gd == 0 and e_gd <= 2 * e_pt and m_gd <= 2 * m_pt
        ok = ok and passed
        r.update({"gd_err_max": e_gd, "gd_err_median": m_gd, "torch_err_max": e_pt,
                  "torch_err_median": m_pt, "gd_vs_torch_max": d_max, "argmax_agree": agree,
                  "argmax_agree_truth": agree_truth, "gd_nan": nan_gd, "pass": passed})
        results[fmt] = r
        log("%s %s: gpudiff %.3g (median %.3g) torch %.3g (median %.3g) |gd-pt| %.3g, argmax "
            "agree %.4f, torch forward %.2f ms: %s" % (a.name, fmt, e_gd, m_gd, e_pt, m_pt,
                                                      d_max, agree, pt_ms,
                                                      "ok" if passed else "OVER"))
        del gd, pt, truth
        torch.cuda.empty_cache()
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if ok else 1


def speed(a):
    """PyTorch eager's forward time for configuration a.name at a.batch x a.seq in a.dtype
    (TF32 as a.tf32 says), the inputs saved for the engine under a.save, and (TF32 off) the
    output, float32, beside them."""
    import torch
    tf32 = a.tf32 == "on"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    seq = a.seq or gpt2_export.CONFIGS[a.name]["n_ctx"]
    inputs = gpt2_export.make_inputs(a.name, a.batch, seq, a.seed)
    if a.save:
        for n, x in zip(gpt2_export.input_names(a.name), inputs):
            np.save("%s.%s.npy" % (a.save, n), x)
    tdt = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[a.dtype]
    m = gpt2_export.make_model(a.name, a.seed, "cpu").to(device="cuda", dtype=tdt)
    args = tuple(torch.from_numpy(x).cuda() for x in inputs)
    y, ms = timed_forward(m, args, torch, repeats=a.repeats)
    if a.save and not tf32:
        np.save("%s.torch_out.npy" % a.save, y.float().cpu().numpy())
    print("torch_ms %s batch %d seq %d %s tf32 %s: %.3f" % (a.name, a.batch, seq, a.dtype, a.tf32,
                                                           ms))
    return 0


def compare(a):
    """max |x - ref| / max |ref| of two saved outputs (float32 or float16)."""
    x = np.load(a.x).astype(np.float64)
    ref = np.load(a.ref).astype(np.float64)
    if x.shape != ref.shape:
        print("compare: shapes %s and %s" % (x.shape, ref.shape))
        return 1
    r = float(np.max(np.abs(x - ref))) / (float(np.max(np.abs(ref))) or 1.0)
    ok = r <= a.bound
    print("compare %s %s: %.3g (bound %.0e) %s" % (os.path.basename(a.x), os.path.basename(a.ref),
                                                  r, a.bound, "ok" if ok else "FAIL"))
    return 0 if ok else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("speed")
    sp.add_argument("name", choices=sorted(gpt2_export.CONFIGS))
    sp.add_argument("--batch", type=int, default=8)
    sp.add_argument("--seq", type=int, default=None)
    sp.add_argument("--dtype", default="float32", choices=["float32", "float16", "bfloat16"])
    sp.add_argument("--tf32", default="off", choices=["off", "on"])
    sp.add_argument("--repeats", type=int, default=10)
    sp.add_argument("--save")
    sp.add_argument("--seed", type=int, default=0)
    cp = sub.add_parser("compare")
    cp.add_argument("x")
    cp.add_argument("ref")
    cp.add_argument("--bound", type=float, default=1e-3)
    c = sub.add_parser("check")
    c.add_argument("name", choices=sorted(gpt2_export.CONFIGS))
    c.add_argument("ids")
    c.add_argument("gd_float16")
    c.add_argument("gd_bfloat16")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--json")
    a = ap.parse_args()
    if a.cmd == "speed":
        return speed(a)
    if a.cmd == "compare":
        return compare(a)
    return check(a)


if __name__ == "__main__":
    sys.exit(main())
