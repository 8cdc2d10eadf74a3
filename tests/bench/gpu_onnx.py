#!/usr/bin/env python3
"""ONNX models from PyTorch through gpudiff on the GPU machine (tests/bench/gpu_onnx.sh runs
it with /opt/torch/.venv/bin/python3: torch, torchvision, onnx, onnxruntime; no network, so
random weights).

For each of resnet18, mobilenet_v3_small, efficientnet_b0, vit_b_16 and a 4-layer
nn.TransformerEncoder (d_model 256, batch_first, input 2 x 16 x 256):
  1. export with torch.onnx.export: the TorchScript exporter at opset 17 (plain ONNX ops,
     shapes constant-folded; LayerNormalization exists from 17), else the dynamo exporter
     at opset 18, one file without external data;
  2. run it on onnxruntime's CPU provider, and the model in float64 on the CPU in torch;
  3. run it through gpudiff-agent on cpu64, cpu, cuda (TF32 off) and cuda (TF32 on);
  4. compare each output: max |a - b| / max |b| against onnxruntime (float32 backends) or
     the float64 torch run (cpu64), with the bounds of docs/ONNX.md;
  5. `gpudiff-agent diff` of cuda TF32 on against off: the first divergent layer.
Then gpudiff's load of the vit_b_16 file against onnxruntime's session creation on the same
file, median of 5 each in the same run. A model that fails a step is reported with the step
and the error; the others go on. Logs and bundles go to --out; the summary comes last.
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

# docs/ONNX.md, "Whole models": agreement of a network's output, relative to its largest value.
BOUND_F32 = 1e-3      # float32 backend against onnxruntime: ONNX's rtol, on the output's scale
BOUND_TF32 = 1e-2     # TF32 (10-bit mantissa, 2^-11 per rounding) against onnxruntime
BOUND_F64 = 1e-10     # cpu64 against torch in float64: 2^-53 times 1e6 (depth x reduction)


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def build_model(name):
    import torch
    import torchvision
    torch.manual_seed(0)
    if name == "transformer":
        layer = torch.nn.TransformerEncoderLayer(d_model=256, nhead=8, dim_feedforward=1024,
                                                 dropout=0.0, batch_first=True)
        model = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False)
        x = torch.randn(2, 16, 256)
    else:
        model = getattr(torchvision.models, name)(weights=None).eval()
        x = torch.randn(1, 3, 224, 224)
        if name == "vit_b_16":
            # torchvision starts the classifier at zero weights: every output would be its
            # (zero) bias, and every comparison trivially exact
            torch.nn.init.normal_(model.heads.head.weight, std=0.02)
        if any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules()):
            # The TorchScript exporter folds BatchNormalization into the Conv weights in
            # float32, so the file's weights are not the module's: fold them here first
            # (torch.fx), so the file and the float64 reference hold the same weights.
            from torch.fx.experimental.optimization import fuse
            model = fuse(model)
    return model.eval(), x


def export(model, x, path):
    """Returns (exporter, opset)."""
    import torch
    errors = []
    try:
        torch.onnx.export(model, (x,), path, opset_version=17, dynamo=False,
                          input_names=["input"], output_names=["output"],
                          do_constant_folding=True)
        return "torchscript", 17
    except Exception as e:  # noqa: BLE001 - report and try the other exporter
        errors.append(f"torchscript: {e}")
    try:
        try:
            prog = torch.onnx.export(model, (x,), dynamo=True, opset_version=18,
                                     input_names=["input"], output_names=["output"])
        except TypeError:
            prog = torch.onnx.export(model, (x,), dynamo=True)
        try:
            prog.save(path, external_data=False)
        except TypeError:
            prog.save(path)
        return "dynamo", 18
    except Exception as e:  # noqa: BLE001
        errors.append(f"dynamo: {e}")
    raise RuntimeError("; ".join(errors))


def agent_run(agent, model, inp, out, backend, extra=()):
    cmd = [agent, "run", "--model", model, "--input", inp, "--backend", backend, "--out", out,
           "--replace", "--json", *extra]
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[1:])}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    run = json.load(open(os.path.join(out, "run.json")))
    name = run["outputs"][0]
    layer = next(l for l in run["layers"] if l["name"] == name)
    return np.load(os.path.join(out, layer["file"])), dt, len(run["layers"]), len(run["folded"])


def rel(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    if a.shape != b.shape:
        return float("inf")
    scale = float(np.max(np.abs(b))) or 1.0
    return float(np.max(np.abs(a - b))) / scale


def one_model(name, args, res):
    import onnxruntime as ort
    import torch
    d = os.path.join(args.out, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.onnx")
    step = "build"
    try:
        model, x = build_model(name)
        step = "export"
        exporter, opset = export(model, x, path)
        res.update(exporter=exporter, opset=opset, mb=os.path.getsize(path) / 1e6)
        inp = os.path.join(d, "input.npy")
        np.save(inp, x.numpy())
        step = "onnxruntime"
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        y_ort = sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0]
        step = "torch float64"
        with torch.no_grad():
            y64 = copy.deepcopy(model).double()(x.double()).numpy()
        res["ort_vs_f64"] = rel(y_ort, y64)
        runs = [("cpu64", "cpu64", (), y64, BOUND_F64, "torch float64"),
                ("cpu", "cpu", (), y_ort, BOUND_F32, "onnxruntime"),
                ("cuda_tf32_off", "cuda", ("--tf32", "off"), y_ort, BOUND_F32, "onnxruntime"),
                ("cuda_tf32_on", "cuda", ("--tf32", "on"), y_ort, BOUND_TF32, "onnxruntime")]
        for key, backend, extra, ref, bound, ref_name in runs:
            step = f"gpudiff {key}"
            y, dt, n_layers, n_folded = agent_run(args.agent, path, inp, os.path.join(d, key),
                                                  backend, extra)
            r = rel(y, ref)
            res[key] = {"rel": r, "bound": bound, "against": ref_name, "ok": r <= bound,
                        "rel_vs_f64": rel(y, y64), "seconds": round(dt, 2),
                        "layers": n_layers, "folded": n_folded}
        step = "diff"
        p = subprocess.run([args.agent, "diff", os.path.join(d, "cuda_tf32_on"),
                            os.path.join(d, "cuda_tf32_off"), "--json"],
                           capture_output=True, text=True)
        if p.returncode not in (0, 7):
            raise RuntimeError(f"diff: exit {p.returncode}: {p.stderr.strip()[-400:]}")
        diff = json.loads(p.stdout)
        res["first_divergent"] = diff.get("first_divergent")
        res["ok"] = all(res[k]["ok"] for k, *_ in runs)
    except Exception as e:  # noqa: BLE001 - a model's failure must not stop the others
        res["failed"] = {"step": step, "error": str(e)[-800:]}
        res["ok"] = False
        log(f"{name}: {step} failed:\n{traceback.format_exc()}")


def load_benchmark(args, res):
    import onnxruntime as ort
    path = os.path.join(args.out, "vit_b_16", "model.onnx")
    try:
        if not os.path.exists(path):
            raise RuntimeError("no vit_b_16 export")
        if not os.access(args.bench, os.X_OK):
            raise RuntimeError(f"{args.bench} is missing: `make -C BUILD bench` builds it")
        p = subprocess.run([args.bench, path, "5", "--json"], capture_output=True, text=True)
        if p.returncode != 0:
            raise RuntimeError(p.stderr.strip()[-400:])
        g = json.loads(p.stdout)
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            times.append((time.perf_counter() - t0) * 1e3)
        res.update(mb=g["bytes"] / 1e6, gpudiff_ms=g["gpudiff_load_ms"],
                   plain_read_ms=g["plain_read_ms"], ort_ms=sorted(times)[2],
                   ratio=g["gpudiff_load_ms"] / sorted(times)[2])
    except Exception as e:  # noqa: BLE001
        res["failed"] = str(e)[-600:]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", required=True, help="the build folder (gpudiff-agent, bench)")
    ap.add_argument("--out", required=True, help="folder for models, bundles and gpu_onnx.json")
    ap.add_argument("--models", default="resnet18,mobilenet_v3_small,efficientnet_b0,vit_b_16,"
                    "transformer")
    args = ap.parse_args()
    args.agent = os.path.join(args.build, "gpudiff-agent")
    args.bench = os.path.join(args.build, "tests", "bench", "bench_onnx_load")
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for name in args.models.split(","):
        log(f"== {name}")
        results[name] = {}
        one_model(name, args, results[name])
    results["load"] = {}
    load_benchmark(args, results["load"])
    with open(os.path.join(args.out, "gpu_onnx.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("== summary (docs/ONNX.md says what each line should say)")
    for name in args.models.split(","):
        r = results[name]
        parts = []
        if "exporter" in r:
            parts.append(f"{r['exporter']} opset {r['opset']}, {r['mb']:.1f} MB;")
        if "cpu" in r:
            parts.append(f"{r['cpu']['layers']} layers, {r['cpu']['folded']} folded;")
        for k in ("cpu64", "cpu", "cuda_tf32_off", "cuda_tf32_on"):
            if k in r:
                parts.append(f"{k} {r[k]['rel']:.2e} vs {r[k]['against']} "
                             f"(<= {r[k]['bound']:.0e} {'ok' if r[k]['ok'] else 'OVER'});")
        if "ort_vs_f64" in r:
            parts.append(f"onnxruntime vs float64 {r['ort_vs_f64']:.2e};")
        if "first_divergent" in r:
            parts.append(f"first divergent TF32 on/off: {r['first_divergent']}")
        if "failed" in r:
            parts.append(f"FAILED at {r['failed']['step']}: {r['failed']['error'][:300]}")
            print(f"{name}: FAILED: " + " ".join(parts))
            continue
        print(f"{name}: {'ok' if r['ok'] else 'OVER A BOUND'}: " + " ".join(parts))
    ld = results["load"]
    if "failed" in ld:
        print(f"vit_b_16 load: FAILED: {ld['failed']}")
    else:
        print(f"vit_b_16 load ({ld['mb']:.0f} MB, median of 5): gpudiff {ld['gpudiff_ms']:.0f} ms, "
              f"onnxruntime session {ld['ort_ms']:.0f} ms, ratio {ld['ratio']:.2f} "
              f"({'no slower' if ld['ratio'] <= 1 else 'SLOWER'}); plain read "
              f"{ld['plain_read_ms']:.0f} ms")
    return 0 if all(results[n].get("ok") for n in args.models.split(",")) else 1


if __name__ == "__main__":
    sys.exit(main())
