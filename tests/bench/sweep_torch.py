#!/usr/bin/env python3
"""PyTorch as the peer of `gpudiff-agent sweep`, on the same GPU, in the same script.

usage: sweep_torch.py export SEED_DIR WORK
           writes WORK/lenet-11-821.json (the seed model, its weights folder absolute) and
           WORK/resnet50/{model.json,input.npy,*.npy} (torchvision's ResNet-50 with random
           weights and 32 random images, exported as tests/bench/bench_cuda.py does)
       sweep_torch.py table SEED_DIR WORK MODEL REPEATS BATCHES OUT_JSON
           MODEL seed or resnet50; BATCHES a comma list (the whole batch is the reference);
           the table of settings cudnn.benchmark / cudnn.deterministic x allow_tf32 (matmul and
           cuDNN): forward time (median of REPEATS, input on the GPU, CUDA events; and end to
           end from the host input to the output on the host), the output's max abs and ULP
           against a float64 PyTorch run (same GPU), run to run (3 forwards bitwise equal),
           and batch invariance (the rows at each batch size bitwise equal to the whole
           batch's)
       sweep_torch.py side ENGINE_JSON TORCH_JSON
           both tables side by side (each engine setting beside its PyTorch peer), then the
           lines the issue's "must show" asks for, from the engine's own measurements
Needs PyTorch, torchvision and numpy (the H200 machine: /opt/torch/.venv/bin/python3).
"""
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

# Each PyTorch setting and the engine setting it is the peer of.
MODES = (("default", "heuristic"), ("benchmark", "autotune"), ("deterministic", "deterministic"))


def export(seed, work):
    sys.path.insert(0, HERE)
    import bench_cuda
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(HERE, "..", "fixtures", "models", "lenet-11-821.json")) as f:
        m = json.load(f)
    m["weights_dir"] = os.path.join(os.path.abspath(seed), "initializer")
    with open(os.path.join(work, "lenet-11-821.json"), "w") as f:
        json.dump(m, f)
    bench_cuda.resnet50(work)


def load_model(name, seed, work):
    import torch
    sys.path.insert(0, HERE)
    import bench_cuda
    if name == "seed":
        x = torch.from_numpy(np.load(os.path.join(seed, "input.npz"))["inp"])
        return bench_cuda.Lenet(seed).eval(), x
    torch.manual_seed(0)
    model, x, _, _ = bench_cuda.resnet50(work)  # the same weights and input as exported
    return model.eval(), x


def ulp_max(a32, ref64):
    """Max ULP distance of float32 a from float64 ref rounded to float32 (the engine's rule)."""
    def mapped(v):
        i = v.view(np.int32).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFFFFFF), i)
    r = ref64.astype(np.float32)
    return int(np.max(np.abs(mapped(a32) - mapped(r)))) if a32.size else 0


def table(seed, work, name, repeats, batches, out_path):
    import torch
    model, x_host = load_model(name, seed, work)
    model = model.cuda()
    x = x_host.cuda()
    with torch.no_grad():
        import copy
        m64 = copy.deepcopy(model).double()
        ref = m64(x.double()).cpu().numpy()
        del m64
    torch.cuda.empty_cache()
    rows = []
    for tf32 in (False, True):
        for mode, peer in MODES:
            torch.backends.cudnn.benchmark = mode == "benchmark"
            torch.backends.cudnn.deterministic = mode == "deterministic"
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            with torch.no_grad():
                for _ in range(3):
                    model(x)
                torch.cuda.synchronize()
                times, e2e = [], []
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                for _ in range(repeats):
                    start.record()
                    model(x)
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end))
                import time
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    model(x_host.cuda()).cpu()
                    e2e.append((time.perf_counter() - t0) * 1e3)
                outs = [model(x) for _ in range(3)]
                same = all(torch.equal(outs[0], o) for o in outs[1:])
                y = outs[0].cpu().numpy()
                sizes = []
                for b in batches:
                    if b >= x.shape[0]:
                        continue
                    yb = torch.cat([model(x[i:i + b]) for i in range(0, x.shape[0], b)])
                    sizes.append({"batch": b, "identical": bool(torch.equal(yb, outs[0])),
                                  "max_abs": float((yb - outs[0]).abs().max())})
            rows.append({
                "name": "%s tf32=%s" % (mode, "on" if tf32 else "off"),
                "engine_peer": "%s tf32=%s" % (peer, "on" if tf32 else "off"),
                "forward_ms": float(np.median(times)),
                "end_to_end_ms": float(np.median(e2e)),
                "max_abs_vs_float64": float(np.max(np.abs(y.astype(np.float64) - ref))),
                "max_ulp_vs_float64": ulp_max(y, ref),
                "run_to_run_identical": same,
                "batch": sizes,
                "batch_invariant": all(s["identical"] for s in sizes) if sizes else None,
            })
            print("torch %s %s: %.3f ms, max abs %.3g against float64, run to run %s, batch "
                  "invariant %s" % (name, rows[-1]["name"], rows[-1]["forward_ms"],
                                    rows[-1]["max_abs_vs_float64"], same,
                                    rows[-1]["batch_invariant"]), file=sys.stderr)
    doc = {"model": name, "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "gpu": torch.cuda.get_device_name(), "repeats": repeats, "batches": batches,
           "settings": rows}
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)


def yn(v):
    return "yes" if v is True else "no" if v is False else "-"


def g(v):
    return "-" if v is None else "%.2g" % v


def side(engine_path, torch_path):
    e = json.load(open(engine_path))
    t = json.load(open(torch_path))
    peers = {r["engine_peer"]: r for r in t["settings"]}
    name = e["model"]["name"]
    print("\n%s on %s: engine (cuDNN %s, cuBLAS %s) beside PyTorch %s (cuDNN %s)" % (
        name, e.get("env", {}).get("gpu_name", "?"), e.get("env", {}).get("cudnn", "?"),
        e.get("env", {}).get("cublas", "?"), t["torch"], t["cudnn"]))
    print("%-34s %9s %9s %9s %4s %4s | %-20s %9s %9s %9s %4s %4s" % (
        "engine setting", "ms", "e2e ms", "vs f64", "det", "inv", "PyTorch", "ms", "e2e ms",
        "vs f64", "det", "inv"))
    for s in e["settings"]:
        p = peers.get(s["name"])
        if s["status"] != "ok":
            left = "%-34s %s" % (s["name"], "cannot run: " + (s.get("error") or "")[:60])
            print(left)
            continue
        left = "%-34s %9.3f %9.3f %9s %4s %4s" % (
            s["name"], s["time"]["forward_ms"], s["time"]["end_to_end_ms"],
            g(s["vs_float64"].get("output", {}).get("max_abs")
              if s["vs_float64"].get("compared") else None),
            yn(s.get("deterministic")), yn(s.get("batch_invariant")))
        right = "" if p is None else "| %-20s %9.3f %9.3f %9s %4s %4s" % (
            p["name"], p["forward_ms"], p["end_to_end_ms"], g(p["max_abs_vs_float64"]),
            yn(p["run_to_run_identical"]), yn(p["batch_invariant"]))
        print(left + " " + right)
    by = {s["name"]: s for s in e["settings"]}
    ans = e.get("answers", {})

    def fd(s):
        f = s.get("vs_float64", {}).get("first_divergent") if s else None
        return f["layer"] if f else "none"
    on, off = by.get("heuristic tf32=on"), by.get("heuristic tf32=off")
    if on and off and on["status"] == off["status"] == "ok":
        print("%s: heuristic tf32=on: first divergent against float64 %s (output max abs %s); "
              "tf32=off: %s (%s); turning TF32 off costs %.2fx (%.3f -> %.3f ms)" % (
                  name, fd(on), g(on["vs_float64"]["output"]["max_abs"]), fd(off),
                  g(off["vs_float64"]["output"]["max_abs"]),
                  off["time"]["forward_ms"] / on["time"]["forward_ms"],
                  on["time"]["forward_ms"], off["time"]["forward_ms"]))
    det = by.get("deterministic tf32=off")
    if det and det["status"] == "ok":
        rr = det["run_to_run"]
        print("%s: deterministic tf32=off: bitwise reproducible %s (%d captures in fresh "
              "sessions, %d timed outputs), %.2fx the fastest" % (
                  name, yn(det.get("deterministic")), rr.get("captures", 0),
                  rr.get("outputs_runs", 0), det["time"]["x_fastest"]))
    for s in e["settings"]:
        for b in (s.get("batch") or {}).get("sizes", []):
            if b.get("identical") is False:
                ch = ["%s: \"%s\" -> \"%s\"" % (c["layer"], c["reference"], c["this"])
                      for c in b.get("algo_changes", [])]
                print("%s: %s at batch %d: %d of %d layers differ, first %s; algorithm changes: "
                      "%s" % (name, s["name"], b["batch"], len(b["differing_layers"]),
                              b["layers"], (b.get("first_differing") or {}).get("layer"),
                              "; ".join(ch) or "none"))
    for k in ("fastest", "cheapest_deterministic", "cheapest_batch_invariant"):
        p = ans.get(k)
        print("%s: %s: %s" % (name, k, "%s (%.3f ms, %.2fx)" % (p["setting"], p["forward_ms"],
                                                                p["x_fastest"]) if p else "none"))
    tm = e.get("timing", {})
    if tm:
        print("%s: sweep %.1f s: engine %.1f s, comparisons %.1f s, overhead %.1f s (%.1f%%), "
              "of it capture handling %.1f s" % (
                  name, tm["total_s"], tm["engine_s"], tm["compare_s"], tm["overhead_s"],
                  100 * tm["overhead_fraction"], tm["capture_handling_s"]))


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "export" and len(sys.argv) == 4:
        export(sys.argv[2], sys.argv[3])
    elif cmd == "table" and len(sys.argv) == 8:
        table(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]),
              [int(b) for b in sys.argv[6].split(",")], sys.argv[7])
    elif cmd == "side" and len(sys.argv) == 4:
        side(sys.argv[2], sys.argv[3])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
