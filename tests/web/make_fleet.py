#!/usr/bin/python3
"""tests/web/make_fleet.py: the data of the dashboard's scale test (tests/web/dashboard.sh).

  make_fleet.py DIR                     everything below (the browser test's data)
  make_fleet.py --encoder PAIRS DIR     only DIR/encoder, of PAIRS pairs (tests/bench/web_depth.sh
                                        makes the 10,000-layer model with 5,000)

writes, deterministically (numpy's RandomState with fixed seeds):

- DIR/big/model.json, weights.npz, input.npy: a 1,000-layer model for `gpudiff-agent run`:
  200 residual blocks of five layers (scale, shift, activation, residual Add, damping Mul),
  element-wise ops only up to block 119, so that a run emulating TF32 in its matrix products
  is bitwise equal to the float32 run for the first 600 layers; from block 120 on every
  fourth block scales with a Gemm, and block 150's activation is a Floor whose input, in its
  first row, lies within 2e-4 of an integer (an amplifier: those values flip under the Gemms'
  rounding differences).
- DIR/fleet/NN/*.npy and DIR/fleet/manifest.txt: 50 "devices" of a 6-layer model
  ("fleet-50"), framework dumps for `gpudiff-agent bundle`: each device's layers are the
  reference arrays with relative noise of its own size (from none to 1e-1 in 25 steps, two
  devices per step), and a manifest line per device: folder, backend, GPU name, driver,
  CUDA, cuDNN, knobs (JSON), separated by "|". The device keys are long on purpose (GPU names with knobs), as
  fleets have them; device 0 is a GPU dump that records no GPU name; device 48's output holds
  NaN values and device 49 is its bitwise twin (a cell of 0 that must not read as finite).

- DIR/encoder/model.json, weights.npz, input.npy: a model of 1,000 Gemm+Tanh pairs named
  encoder.layer.NNNN.dense and encoder.layer.NNNN.tanh ("enc-2000", 2,000 layers of 2 x 16
  values: a deep model whose layers are cheap), for the diff view at depth: names that share
  their first 15 characters, a first divergent layer at the first Gemm under TF32.
- DIR/pole/model_a.json, model_b.json, weights.npz, input.npy: one network in two model
  files ("pole"): a MatMul, an Add and a Reciprocal, model b with a Mul by ones between the
  Add and the Reciprocal (a layer only one file has); the Add's output of row 0, column 0 is
  3e-4, so under TF32 rounding upstream the Reciprocal is ill-conditioned there (near its pole).

Only numpy and the standard library: CI has Debian's /usr/bin/python3 with python3-numpy.
"""
import json
import os
import sys

import numpy as np

BLOCKS = 200
FIRST_GEMM_BLOCK = 120
FLOOR_BLOCK = 150
WIDTH = 64
BATCH = 8

GPUS = [
    "NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA A100-PCIE-40GB",
    "NVIDIA L40S", "NVIDIA L4", "NVIDIA A10G", "NVIDIA GeForce RTX 4090",
    "NVIDIA GeForce RTX 3090", "NVIDIA RTX A6000", "Tesla V100-SXM2-32GB", "Tesla T4",
    "NVIDIA GH200 480GB", "NVIDIA B200", "NVIDIA GeForce RTX 2080 Ti", "NVIDIA A30",
    "NVIDIA A40",
]
KNOB_SETS = [
    {},
    {"tf32": True},
    {"conv_algo": "autotune"},
    {"tf32": True, "conv_algo": "autotune", "batch": 32},
    {"conv_algo": "deterministic", "batch": 7},
]
FLEET_LAYERS = [("conv1", "Conv"), ("relu1", "Relu"), ("pool1", "MaxPool"), ("fc1", "Gemm"),
                ("relu2", "Relu"), ("output", "Gemm")]


def activation(op, x):
    """The activations in float32 as ONNX defines them (Elu with alpha 1)."""
    if op == "Tanh":
        return np.tanh(x)
    if op == "Sigmoid":
        return (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32)
    if op == "Relu":
        return np.maximum(x, 0)
    if op == "Elu":
        return np.where(x > 0, x, np.expm1(x.astype(np.float64))).astype(np.float32)
    return np.floor(x)


def big_model(out):
    rng = np.random.RandomState(13)
    os.makedirs(out, exist_ok=True)
    weights, nodes = {}, []
    prev = "input"
    x = rng.uniform(-2, 2, (BATCH, WIDTH)).astype(np.float32)
    np.save(os.path.join(out, "input.npy"), x)
    for k in range(BLOCKS):
        b = "b%03d" % k
        if k >= FIRST_GEMM_BLOCK and k % 4 == 0:
            w = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
            weights[b + ".w"] = w
            nodes.append({"name": b + ".gemm", "op": "Gemm", "inputs": [prev, b + ".w"]})
            scaled, y = b + ".gemm", (x.astype(np.float64) @ w).astype(np.float32)
        else:
            s = rng.uniform(0.5, 1.5, WIDTH).astype(np.float32)
            weights[b + ".s"] = s
            nodes.append({"name": b + ".mul", "op": "Mul", "inputs": [prev, b + ".s"]})
            scaled, y = b + ".mul", x * s
        t = rng.uniform(-0.2, 0.2, WIDTH).astype(np.float32)
        if k == FLOOR_BLOCK:
            # The Floor's input of batch row 0 within 2e-4 of an integer (this float32 forward
            # pass is within a few ulps of the engine's): the TF32 runs' rounding differences
            # upstream, about 1e-3 here, push many of them across.
            near = np.round(y[0] + t) + rng.uniform(-2e-4, 2e-4, WIDTH)
            t = (near - y[0]).astype(np.float32)
        weights[b + ".t"] = t
        y = y + t
        nodes.append({"name": b + ".add", "op": "Add", "inputs": [scaled, b + ".t"]})
        act = "Floor" if k == FLOOR_BLOCK else ("Tanh", "Sigmoid", "Relu", "Elu")[k % 4]
        nodes.append({"name": b + "." + act.lower(), "op": act, "inputs": [b + ".add"]})
        nodes.append({"name": b + ".res", "op": "Add", "inputs": [prev, b + "." + act.lower()]})
        weights[b + ".d"] = np.full(WIDTH, 0.6, np.float32)
        nodes.append({"name": b + ".out", "op": "Mul", "inputs": [b + ".res", b + ".d"]})
        x = (x + activation(act, y)) * np.float32(0.6)
        prev = b + ".out"
    np.savez(os.path.join(out, "weights.npz"), **weights)
    model = {
        "format": "gpudiff-model", "version": 1, "name": "big-1000",
        "description": "tests/web/make_fleet.py: 200 residual blocks of 5 layers",
        "inputs": [{"name": "input", "dtype": "float32", "shape": [-1, WIDTH]}],
        "outputs": [prev],
        "weights": [{"name": n, "file": "weights.npz", "key": n, "dtype": "float32",
                     "shape": list(v.shape)} for n, v in weights.items()],
        "nodes": nodes,
    }
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump(model, f, indent=0)
    assert len(nodes) == 5 * BLOCKS


def fleet(out):
    rng = np.random.RandomState(50)
    shapes = [(4, 8, 6, 6), (4, 8, 6, 6), (4, 8, 3, 3), (4, 32), (4, 32), (4, 10)]
    ref = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    lines = []
    for d in range(50):
        step = d // 2  # 0: exact copies; then 1e-8 ... 1e-1 relative noise
        rel = 0.0 if step == 0 else 10.0 ** (-8 + 7 * (step - 1) / 23)
        folder = os.path.join(out, "%02d" % d)
        os.makedirs(folder, exist_ok=True)
        for (name, _), r in zip(FLEET_LAYERS, ref):
            # devices 48 and 49: the same noise (49 is 48's bitwise twin), NaN in the output
            twin = 1048 if d in (48, 49) else 1000 + d
            v = r.astype(np.float64) * (1 + rel * np.random.RandomState(twin).standard_normal(r.shape))
            if name.startswith("relu"):
                v = np.maximum(v, 0)
            v = v.astype(np.float32)
            if d in (48, 49) and name == "output":
                v[0, :3] = np.nan
            np.save(os.path.join(folder, name + ".npy"), v)
        # Device 0 is a framework's GPU dump that did not record its GPU: it must not read "CPU".
        gpu = GPUS[d % len(GPUS)] if d else ""
        knobs = KNOB_SETS[d // len(GPUS) % len(KNOB_SETS)] if d >= len(GPUS) else {}
        backend = "pytorch-cuda" if d % 3 == 0 else "cuda"
        driver = ("535.183.01", "550.54.15", "560.35.03")[d % 3]
        cudnn = ("8.9.7", "9.1.0", "9.19.0")[d % 3]
        cuda = ("12.2", "12.4.1", "13.0")[d % 3]
        if d >= 2 * len(GPUS):
            knobs = dict(knobs, batch=16 + d)
        lines.append("|".join([folder, backend, gpu, driver, cuda, cudnn,
                                json.dumps(knobs, sort_keys=True)]))
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


ENCODER_WIDTH = 16
ENCODER_BATCH = 2


def encoder(out, pairs):
    """pairs Gemm+Tanh layers named encoder.layer.NNNN.dense, encoder.layer.NNNN.tanh."""
    rng = np.random.RandomState(26)
    os.makedirs(out, exist_ok=True)
    np.save(os.path.join(out, "input.npy"),
            rng.uniform(-1, 1, (ENCODER_BATCH, ENCODER_WIDTH)).astype(np.float32))
    weights, nodes = {}, []
    prev = "input"
    for k in range(pairs):
        base = "encoder.layer.%04d" % k
        # orthogonal weights: the activations keep their size at any depth, in tanh's range
        q, _ = np.linalg.qr(rng.standard_normal((ENCODER_WIDTH, ENCODER_WIDTH)))
        weights[base + ".w"] = q.astype(np.float32)
        nodes.append({"name": base + ".dense", "op": "Gemm", "inputs": [prev, base + ".w"]})
        nodes.append({"name": base + ".tanh", "op": "Tanh", "inputs": [base + ".dense"]})
        prev = base + ".tanh"
    np.savez(os.path.join(out, "weights.npz"), **weights)
    model = {
        "format": "gpudiff-model", "version": 1, "name": "enc-%d" % (2 * pairs),
        "description": "tests/web/make_fleet.py: %d Gemm+Tanh pairs" % pairs,
        "inputs": [{"name": "input", "dtype": "float32", "shape": [-1, ENCODER_WIDTH]}],
        "outputs": [prev],
        "weights": [{"name": n, "file": "weights.npz", "key": n, "dtype": "float32",
                     "shape": list(v.shape)} for n, v in weights.items()],
        "nodes": nodes,
    }
    with open(os.path.join(out, "model.json"), "w") as f:
        json.dump(model, f, indent=0)


def pole(out):
    rng = np.random.RandomState(7)
    os.makedirs(out, exist_ok=True)
    x = rng.uniform(-2, 2, (8, 64)).astype(np.float32)
    np.save(os.path.join(out, "input.npy"), x)
    w = (rng.standard_normal((64, 32)) / 8).astype(np.float32)
    y = x.astype(np.float64) @ w
    t = np.zeros(32, np.float32)
    t[0] = np.float32(3e-4 - y[0, 0])
    np.savez(os.path.join(out, "weights.npz"), w=w, t=t, one=np.ones(32, np.float32))

    def spec(n, shape):
        return {"name": n, "file": "weights.npz", "key": n, "dtype": "float32", "shape": shape}

    head = [{"name": "gemm", "op": "MatMul", "inputs": ["input", "w"]},
            {"name": "add", "op": "Add", "inputs": ["gemm", "t"]}]
    for name, nodes, weights in (
            ("model_a", head + [{"name": "recip", "op": "Reciprocal", "inputs": ["add"]}],
             [spec("w", [64, 32]), spec("t", [32])]),
            ("model_b", head + [{"name": "scale", "op": "Mul", "inputs": ["add", "one"]},
                                {"name": "recip", "op": "Reciprocal", "inputs": ["scale"]}],
             [spec("w", [64, 32]), spec("t", [32]), spec("one", [32])])):
        model = {"format": "gpudiff-model", "version": 1, "name": "pole",
                 "description": "tests/web/make_fleet.py: a Reciprocal near its pole (%s)" % name,
                 "inputs": [{"name": "input", "dtype": "float32", "shape": [-1, 64]}],
                 "outputs": ["recip"], "weights": weights, "nodes": nodes}
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(model, f, indent=0)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--encoder":
        encoder(os.path.join(sys.argv[3], "encoder"), int(sys.argv[2]))
        return
    if len(sys.argv) != 2:
        sys.exit("usage: make_fleet.py DIR | make_fleet.py --encoder PAIRS DIR")
    big_model(os.path.join(sys.argv[1], "big"))
    fleet(os.path.join(sys.argv[1], "fleet"))
    pole(os.path.join(sys.argv[1], "pole"))
    encoder(os.path.join(sys.argv[1], "encoder"), 1000)


if __name__ == "__main__":
    main()
