#!/bin/sh
# Models whose nodes mix rows of the batch (BatchNormalization with batch statistics, a
# reduction over axis 0, a Flatten with axis 0): `gpudiff-agent run` runs them whole, every
# layer written with its own dim 0, and refuses them with --batch N, exit 5, naming the node.
. ./tests/integration/env.sh
need_numpy
cat >"$TMP/mix.json" <<'JSON'
{"format": "gpudiff-model", "version": 1, "name": "mix",
 "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 2, 3]}],
 "weights": [
  {"name": "s", "dtype": "float32", "shape": [2], "values": [1.0, 2.0]},
  {"name": "b", "dtype": "float32", "shape": [2], "values": [0.0, 1.0]},
  {"name": "m", "dtype": "float32", "shape": [2], "values": [0.5, -0.5]},
  {"name": "v", "dtype": "float32", "shape": [2], "values": [1.0, 2.0]}],
 "nodes": [
  {"name": "bn", "op": "BatchNormalization", "inputs": ["x", "s", "b", "m", "v"],
   "outputs": ["y", "running_mean", "running_var"], "attrs": {"training_mode": 1}},
  {"name": "relu", "op": "Relu", "inputs": ["y"], "outputs": ["r"]},
  {"name": "mean0", "op": "ReduceMean", "inputs": ["r"], "outputs": ["z"],
   "attrs": {"axes": [0]}}],
 "outputs": ["z", "running_mean", "running_var"]}
JSON
cat >"$TMP/flat.json" <<'JSON'
{"format": "gpudiff-model", "version": 1, "name": "flat",
 "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 2, 3]}], "weights": [],
 "nodes": [{"name": "flat0", "op": "Flatten", "inputs": ["x"], "outputs": ["f"],
            "attrs": {"axis": 0}}],
 "outputs": ["f"]}
JSON
"$PYTHON_NUMPY" - "$TMP" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(7)
np.save(sys.argv[1] + "/x.npy", rng.uniform(-2, 2, (10, 2, 3)).astype(np.float32))
PY

# whole: every layer with its own rows, values as numpy computes them (float64, loosely)
"$AGENT" run --model "$TMP/mix.json" --input "$TMP/x.npy" --out "$TMP/whole" >/dev/null ||
    fail "the mixing model did not run without --batch"
"$PYTHON_NUMPY" - "$TMP" <<'PY' || fail "the whole run's layers are wrong"
import glob, os, sys, numpy as np
t = sys.argv[1]
x = np.load(t + "/x.npy").astype(np.float64)
layers = {os.path.basename(f).split("-", 1)[1][:-4]: np.load(f)
          for f in glob.glob(t + "/whole/layers/*.npy")}
mean, var = x.mean(axis=(0, 2)), x.var(axis=(0, 2))
s, b = np.array([1.0, 2.0]), np.array([0.0, 1.0])
y = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + np.float32(1e-5)) * \
    s[None, :, None] + b[None, :, None]
want = {"y": y, "running_mean": np.array([0.5, -0.5]) * np.float32(0.9) + mean *
        (1 - np.float32(0.9)), "running_var": np.array([1.0, 2.0]) * np.float32(0.9) + var *
        (1 - np.float32(0.9)), "r": np.maximum(y, 0), "z": np.maximum(y, 0).mean(axis=0,
                                                                            keepdims=True)}
for name, w in want.items():
    got = layers[name]
    assert got.shape == w.shape, (name, got.shape, w.shape)
    assert np.allclose(got, w, rtol=1e-5, atol=1e-6), (name, np.abs(got - w).max())
print("whole run: %d layers with their own shapes, within 1e-5 of numpy" % len(want))
PY

# --batch: refused with exit 5, naming the node and why, no bundle left
expect_exit 5 "$AGENT" run --model "$TMP/mix.json" --input "$TMP/x.npy" --out "$TMP/b2" \
    --batch 2
grep -q "node bn (BatchNormalization) mixes rows of the batch" "$TMP/err.txt" ||
    fail "--batch 2: the message does not name bn and why"
[ ! -e "$TMP/b2" ] || fail "--batch 2 left a bundle"
# a slice of one row has the Flatten's one row too: refused all the same
expect_exit 5 "$AGENT" run --model "$TMP/flat.json" --input "$TMP/x.npy" --out "$TMP/f1" \
    --batch 1
grep -q "node flat0 (Flatten)" "$TMP/err.txt" || fail "--batch 1: the message does not name flat0"
echo "ok: --batch refused for both models, exit 5, naming the node"
