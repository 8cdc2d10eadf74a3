#!/usr/bin/python3
"""The verdict's calibration corpus: graphs nobody wrote by hand, made here from a seed.

Each case is a random ONNX graph (Conv, Gemm, MatMul, BatchNormalization,
LayerNormalization, Softmax, pooling, activations, reductions of 1 to 10^6 terms, and the
copies between them: Reshape, Flatten, Transpose, Concat, Slice), with random, constant,
low-rank, heavy-tailed or positive weights and random, constant, low-entropy or positive
inputs, in float32, float16 or bfloat16 (`run --dtype`). Two checks:

  false alarms  `gpudiff-agent run` on cpu and on cpu64, then `diff cpu cpu64`: both runs are
                correct, so every layer must be identical or noise. Any other verdict is a
                false alarm, listed with its figures.
  detection     the same graph with one GEMM or convolution emulated in TF32, BF16 or FP16
                (`run --emulate FMT@NODE`) against the plain cpu run: that node must be
                where the difference starts, with the precision named right (its name in
                the layer's arithmetic; "TF32 or FP16" names both). An injection whose
                format makes no more error than float32 does on that node's data (by the
                node's own noise probe: the format's median error at most 4 times float32's,
                or 4 units in the last place of float32 when float32 computed it exactly)
                cannot be told from float32 rounding and is reported apart, not counted.

Usage: calibration.py AGENT WORKDIR [--cases N] [--inject M] [--seed S] [--tables]
Prints one line per failure and a summary; with --tables, the two Markdown tables of
docs/COMPARISON.md. Exit 1 on any false alarm or when fewer than 99% of the countable
injections are detected with the right precision.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

WEIGHTS = ["random", "constant", "lowrank", "heavy", "positive"]
INPUTS = ["random", "constant", "lowentropy", "positive"]
DTYPES = ["float32"] * 6 + ["float16", "bfloat16"]


class Graph:
    """A graph under construction: nodes, weights, and the current value with its shape."""

    def __init__(self, rng, weights):
        self.rng, self.weights = rng, weights
        self.nodes, self.inits, self.n = [], [], 0
        self.reducers = []  # (node name, op): what an injection may pick

    def name(self, op):
        self.n += 1
        return "%s_%d" % (op.lower(), self.n)

    def weight(self, shape, fan_in, kind=None):
        kind = kind or self.weights
        r = self.rng
        if kind == "constant":
            # one value, not a power of two, so every product rounds the same way
            w = np.full(shape, r.uniform(0.6, 1.4) * 0.7319 / fan_in)
        elif kind == "lowrank" and len(shape) >= 2:
            u = r.standard_normal((shape[0], 1))
            v = r.standard_normal((1, int(np.prod(shape[1:]))))
            w = (u @ v).reshape(shape) / np.sqrt(fan_in)
        elif kind == "heavy":
            t = r.standard_normal(shape) / np.sqrt(r.chisquare(2.0, shape) / 2.0)
            w = np.clip(t, -50, 50) / np.sqrt(fan_in) / 3.0
        elif kind == "positive":
            w = r.uniform(0.0, 2.0, shape) / fan_in
        else:
            w = r.standard_normal(shape) / np.sqrt(fan_in)
        name = "w%d" % len(self.inits)
        self.inits.append(numpy_helper.from_array(w.astype(np.float32), name))
        return name

    def const(self, values, dtype=np.float32):
        name = "c%d" % len(self.inits)
        self.inits.append(numpy_helper.from_array(np.asarray(values, dtype=dtype), name))
        return name

    def node(self, op, inputs, reducer=False, **attrs):
        name = self.name(op)
        self.nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
        if reducer:
            self.reducers.append((name, op))
        return name


def act(g, x):
    op = g.rng.choice(["Relu", "Tanh", "Sigmoid", "LeakyRelu", "Elu"])
    return g.node(op, [x])


def step_image(g, x, shape, history):
    """One op on an NCHW value; returns (value, shape, kind)."""
    n, c, h, w = shape
    r = g.rng
    choice = r.choice(["conv", "conv", "conv", "bn", "act", "pool", "avgpool", "gap", "residual",
                       "concat", "flatten", "reducemean"])
    if choice == "conv" and h >= 1:
        k = int(r.choice([1, 3, 3, 5])) if min(h, w) >= 5 else 1
        groups = 1
        if c > 1 and r.rand() < 0.25:
            groups = c  # depthwise
        cout = c if groups == c else int(r.choice([4, 8, 16, 32, 64]))
        stride = int(r.choice([1, 1, 2])) if min(h, w) > 4 else 1
        dil = int(r.choice([1, 1, 2])) if k > 1 and min(h, w) >= 2 * k + 1 else 1
        pad = (k // 2) * dil
        wname = g.weight((cout, c // groups, k, k), (c // groups) * k * k)
        y = g.node("Conv", [x, wname, g.const(r.standard_normal(cout) * 0.1)], reducer=True,
                   kernel_shape=[k, k], strides=[stride, stride], dilations=[dil, dil],
                   pads=[pad] * 4, group=groups)
        ho = (h + 2 * pad - dil * (k - 1) - 1) // stride + 1
        wo = (w + 2 * pad - dil * (k - 1) - 1) // stride + 1
        return y, (n, cout, ho, wo), "img"
    if choice == "bn":
        y = g.node("BatchNormalization",
                   [x, g.const(r.uniform(0.5, 1.5, c)), g.const(r.standard_normal(c) * 0.1),
                    g.const(r.standard_normal(c) * 0.1), g.const(r.uniform(0.5, 2.0, c))],
                   epsilon=1e-5)
        return y, shape, "img"
    if choice in ("pool", "avgpool") and h >= 2 and w >= 2:
        op = "MaxPool" if choice == "pool" else "AveragePool"
        y = g.node(op, [x], reducer=False, kernel_shape=[2, 2], strides=[2, 2])
        return y, (n, c, h // 2, w // 2), "img"
    if choice == "gap" and h * w > 1:
        return g.node("GlobalAveragePool", [x]), (n, c, 1, 1), "img"
    if choice == "reducemean" and h * w > 1:
        y = g.node("ReduceMean", [x], axes=[2, 3], keepdims=1)
        return y, (n, c, 1, 1), "img"
    if choice == "residual":
        same = [v for v, s, k in history if s == shape and v != x]
        if same:
            return g.node("Add", [x, same[-1]]), shape, "img"
    if choice == "concat":
        same = [(v, s) for v, s, k in history
                if k == "img" and s[0] == n and s[2:] == shape[2:] and v != x]
        if same:
            v, s = same[-1]
            return g.node("Concat", [x, v], axis=1), (n, c + s[1], h, w), "img"
    if choice == "flatten" or h * w * c > 20000:
        return g.node("Flatten", [x], axis=1), (n, c * h * w), "mat"
    return act(g, x), shape, "img"


def step_matrix(g, x, shape, history):
    n, f = shape
    r = g.rng
    choice = r.choice(["gemm", "gemm", "act", "layernorm", "softmax", "reducesum", "seq",
                       "slice", "concat"])
    if choice == "gemm" or f > 4096:
        out = int(r.choice([4, 8, 16, 32, 64, 128]))
        trans = int(r.rand() < 0.5)
        wname = g.weight((out, f) if trans else (f, out), f)
        y = g.node("Gemm", [x, wname, g.const(r.standard_normal(out) * 0.1)], reducer=True,
                   transB=trans)
        return y, (n, out), "mat"
    if choice == "layernorm" and f > 1:
        y = g.node("LayerNormalization", [x, g.const(r.uniform(0.5, 1.5, f)),
                                         g.const(r.standard_normal(f) * 0.1)], axis=-1)
        return y, shape, "mat"
    if choice == "softmax" and f > 1:
        return g.node("Softmax", [x], axis=1), shape, "mat"
    if choice == "reducesum" and f > 1:
        # a sum of many values of one sign grows with f: a mean keeps values in every
        # format's range (the corpus is of correct runs; overflow is not noise)
        op = r.choice(["ReduceSum", "ReduceMean"]) if f <= 64 else "ReduceMean"
        if op == "ReduceSum":
            y = g.node(op, [x, g.const([1], np.int64)], keepdims=1)
        else:
            y = g.node(op, [x], axes=[1], keepdims=1)
        return y, (n, 1), "mat"
    if choice == "seq" and f >= 8 and f % 4 == 0:
        t = int(r.choice([d for d in (2, 4, 8) if f % d == 0]))
        y = g.node("Reshape", [x, g.const([n, t, f // t], np.int64)])
        return y, (n, t, f // t), "seq"
    if choice == "slice" and f > 2:
        k = max(1, f // 2)
        y = g.node("Slice", [x, g.const([0], np.int64), g.const([k], np.int64),
                             g.const([1], np.int64)])
        return y, (n, k), "mat"
    if choice == "concat":
        same = [(v, s) for v, s, k in history if k == "mat" and s[0] == n and v != x]
        if same:
            v, s = same[-1]
            return g.node("Concat", [x, v], axis=1), (n, f + s[1]), "mat"
    return act(g, x), shape, "mat"


def step_sequence(g, x, shape, history):
    n, t, f = shape
    r = g.rng
    choice = r.choice(["matmul", "matmul", "attention", "layernorm", "softmax", "transpose",
                       "act", "flatten"])
    if choice == "matmul":
        out = int(r.choice([8, 16, 32, 64]))
        y = g.node("MatMul", [x, g.weight((f, out), f)], reducer=True)
        return y, (n, t, out), "seq"
    if choice == "attention":
        # normalized first, as transformers do, so the scores stay in range
        x = g.node("LayerNormalization", [x, g.const(np.ones(f)), g.const(np.zeros(f))], axis=-1)
        kt = g.node("Transpose", [x], perm=[0, 2, 1])
        s = g.node("MatMul", [x, kt], reducer=True)
        p = g.node("Softmax", [g.node("Mul", [s, g.const(1.0 / np.sqrt(f))])], axis=-1)
        return g.node("MatMul", [p, x], reducer=True), shape, "seq"
    if choice == "layernorm":
        y = g.node("LayerNormalization", [x, g.const(r.uniform(0.5, 1.5, f)),
                                         g.const(r.standard_normal(f) * 0.1)], axis=-1)
        return y, shape, "seq"
    if choice == "softmax":
        return g.node("Softmax", [x], axis=-1), shape, "seq"
    if choice == "transpose":
        return g.node("Transpose", [x], perm=[0, 2, 1]), (n, f, t), "seq"
    if choice == "flatten":
        return g.node("Flatten", [x], axis=1), (n, t * f), "mat"
    return act(g, x), shape, "seq"


def input_values(rng, kind, shape):
    if kind == "constant":
        return np.full(shape, rng.uniform(0.3, 1.7) * 0.6131)
    if kind == "lowentropy":
        return rng.choice([-1.0, -0.25, 0.5, 0.75, 1.0], size=shape)
    if kind == "positive":
        return rng.uniform(0.0, 1.0, shape)
    return rng.standard_normal(shape)


def make_case(seed):
    """The graph, input and description of case seed."""
    r = np.random.RandomState(seed)
    weights, inputs = r.choice(WEIGHTS), r.choice(INPUTS)
    dtype = str(r.choice(DTYPES))
    g = Graph(r, weights)
    start = r.choice(["img", "img", "mat", "seq", "wide", "plane"])
    n = int(r.choice([1, 2, 3, 4]))
    if start == "img":
        shape = (n, int(r.choice([1, 3, 8, 16])), int(r.choice([8, 12, 16, 24])),
                 int(r.choice([8, 12, 16, 24])))
    elif start == "mat":
        shape = (n, int(r.choice([16, 64, 256, 1024])))
    elif start == "seq":
        shape = (n, int(r.choice([4, 8, 16])), int(r.choice([16, 32, 64])))
    elif start == "wide":  # one long reduction: 10 to 10^6 terms
        shape = (max(1, n // 2), int(10 ** r.uniform(1, 6)))
        start = "mat"
    else:  # a large plane for the pooling reductions
        side = int(10 ** r.uniform(1, 3))
        shape = (1, 2, side, side)
        start = "img"
    x = np.asarray(input_values(r, inputs, shape), dtype=np.float32)
    cur, kind = "x", start
    history = [(cur, shape, kind)]
    for _ in range(int(r.randint(3, 11))):
        step = {"img": step_image, "mat": step_matrix, "seq": step_sequence}[kind]
        cur, shape, kind = step(g, cur, shape, history)
        history.append((cur, shape, kind))
    if not g.reducers:  # every case sums something
        if kind != "mat":
            cur = g.node("Flatten", [cur], axis=1)
            shape = (shape[0], int(np.prod(shape[1:])))
        wname = g.weight((shape[1], 8), shape[1])
        cur = g.node("Gemm", [cur, wname], reducer=True)
    graph = helper.make_graph(g.nodes, "calib%d" % seed,
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              [helper.make_tensor_value_info(cur, TensorProto.FLOAT, None)],
                              initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    desc = {"seed": seed, "weights": weights, "inputs": inputs, "dtype": dtype,
            "start": start, "input_shape": list(x.shape), "nodes": len(g.nodes)}
    return model, x, desc, g.reducers


def agent(cmd, log):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.returncode not in (0, 7):
        log.append("command failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))
        return None
    return p.stdout


def run(args, d, name, extra, dtype, log):
    cmd = [args.agent, "run", "--model", os.path.join(d, "m.onnx"), "--input",
           os.path.join(d, "x.npy"), "--out", os.path.join(d, name), "--threads", "1"] + extra
    if dtype != "float32":
        cmd += ["--dtype", dtype]
    return agent(cmd, log) is not None


def diff(args, d, a, b, log):
    out = agent([args.agent, "diff", os.path.join(d, a), os.path.join(d, b), "--json"], log)
    return json.loads(out) if out else None


def probe_of(d, bundle, layer):
    run_json = json.load(open(os.path.join(d, bundle, "run.json")))
    for l in run_json["layers"]:
        if l["name"] == layer:
            return l.get("noise")
    return None


NAMES = {"tf32": "TF32", "bf16": "BF16", "fp16": "FP16"}
U32 = 2.0 ** -24  # float32's unit roundoff


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("agent")
    ap.add_argument("workdir")
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--inject", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tables", action="store_true")
    ap.add_argument("--only", default="", help="comma list of case numbers to run (debugging)")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    errors = []
    false_cases, n_layers, n_false, n_cases = [], 0, 0, 0
    by_kind = {}  # (weights, dtype) -> [cases, layers, false]
    detect = {"counted": 0, "found": 0, "precision": 0, "below": 0, "misses": [],
              "unprobed": []}
    by_fmt = {f: [0, 0, 0, 0] for f in NAMES}  # counted, found, precision right, below noise
    only = set(int(k) for k in args.only.split(",") if k)
    for i in range(args.cases):
        if only and i not in only:
            continue
        seed = args.seed * 100003 + i
        model, x, desc, reducers = make_case(seed)
        d = os.path.join(args.workdir, "case%d" % i)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        onnx.save(model, os.path.join(d, "m.onnx"))
        np.save(os.path.join(d, "x.npy"), x)
        log = []
        ok = run(args, d, "cpu", [], desc["dtype"], log) and \
            run(args, d, "cpu64", ["--backend", "cpu64"], desc["dtype"], log)
        res = diff(args, d, "cpu", "cpu64", log) if ok else None
        if res is None:
            errors.append("case %d (%s): %s" % (seed, desc, "; ".join(log)))
            shutil.rmtree(d, ignore_errors=True)
            continue
        n_cases += 1
        key = (desc["weights"], desc["dtype"])
        by_kind.setdefault(key, [0, 0, 0])
        by_kind[key][0] += 1
        bad = [l for l in res["layers"] if l["verdict"] not in ("identical", "noise")]
        n_layers += len(res["layers"])
        by_kind[key][1] += len(res["layers"])
        by_kind[key][2] += len(bad)
        n_false += len(bad)
        for l in bad:
            false_cases.append("false alarm: case %d %s: %s (%s) %s, err %.3g of %.3g, median "
                               "%.3g of %.3g (%s, noise from %s)"
                               % (seed, desc, l["name"], l.get("op"), l["verdict"],
                                  l.get("err") or 0, l.get("envelope") or 0,
                                  l.get("err_median") or 0, l.get("envelope_median") or 0,
                                  l.get("decided_by"), l.get("noise_from")))
        if i < args.inject and reducers and desc["dtype"] == "float32":
            r = np.random.RandomState(seed + 7)
            node, op = reducers[int(r.randint(len(reducers)))]
            fmt = str(r.choice(list(NAMES)))
            log = []
            if not run(args, d, "inj", ["--emulate", "%s@%s" % (fmt, node)], "float32", log):
                errors.append("injection %d: %s" % (seed, "; ".join(log)))
                continue
            res = diff(args, d, "inj", "cpu", log)
            if res is None:
                errors.append("injection %d at %s: no diff (%s)" % (seed, node, "; ".join(log)))
                continue
            layer = [l for l in res["layers"] if l["name"] == node][0]
            quiet = layer["verdict"] in ("identical", "noise")
            # A layer too large for the run's probe budget has no probe: nothing says whether
            # the injected precision rises above float32's noise there, so a quiet verdict is
            # neither a miss nor "below noise"; it is counted apart. A loud one still counts.
            probe = probe_of(d, "cpu", node)
            if probe is None and quiet:
                detect["unprobed"].append("not probed: case %d %s at %s (%s), %s"
                                          % (seed, fmt, node, op, layer["verdict"]))
                continue
            fp32 = probe["fp32"]["median"] if probe else 0.0
            below = quiet and probe[fmt]["median"] <= max(4 * fp32, 4 * U32)
            if below:
                detect["below"] += 1
                by_fmt[fmt][3] += 1
                continue
            detect["counted"] += 1
            by_fmt[fmt][0] += 1
            found = res["first_divergent"] == node
            label = layer.get("arithmetic") or ""
            right = found and NAMES[fmt] in label
            detect["found"] += found
            detect["precision"] += right
            by_fmt[fmt][1] += found
            by_fmt[fmt][2] += right
            if not right:
                detect["misses"].append(
                    "miss: case %d %s: %s at %s (%s): first divergent %s, %s, arithmetic %r, "
                    "bits %s, probe %s median %.3g vs fp32 %.3g"
                    % (seed, desc, fmt, node, op, res["first_divergent"], layer["verdict"],
                       label, layer.get("bits"), fmt, probe[fmt]["median"] if probe else 0,
                       fp32))
        shutil.rmtree(d, ignore_errors=True)
    for line in errors + false_cases + detect["misses"] + detect["unprobed"]:
        print(line)
    print("false alarms: %d of %d layers in %d cases" % (n_false, n_layers, n_cases))
    print("detection: %d of %d injections named first divergent, %d with the right precision; "
          "%d below float32 noise (not counted)"
          % (detect["found"], detect["counted"], detect["precision"], detect["below"]))
    if detect["unprobed"]:
        print("%d injections at layers without a noise probe called quiet (not counted)"
              % len(detect["unprobed"]))
    if args.tables:
        print("\n| weights | dtype | cases | layers | called divergent or amplified |")
        print("|---|---|---|---|---|")
        for (w, dt), (c, n, f) in sorted(by_kind.items()):
            print("| %s | %s | %d | %d | %d |" % (w, dt, c, n, f))
        print("| all | | %d | %d | %d |" % (sum(v[0] for v in by_kind.values()), n_layers,
                                           n_false))
        print("\n| injected | counted | first divergent | right precision | below float32 noise |")
        print("|---|---|---|---|---|")
        for f, (c, fo, pr, be) in by_fmt.items():
            print("| %s | %d | %d | %d | %d |" % (NAMES[f], c, fo, pr, be))
    failed = errors or n_false > 0 or \
        (detect["counted"] > 0 and detect["precision"] < 0.99 * detect["counted"])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
