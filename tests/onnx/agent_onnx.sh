#!/bin/sh
# gpudiff-agent with ONNX models: --input NAME=FILE per input (.npy and TensorProto .pb), one
# .npz holding several inputs by name, what run.json lists as folded, the exit codes of a
# broken model (3), of missing ops (5, every op named) and of inputs that do not fit (3), and
# the `ops` listing.
. ./tests/integration/env.sh
need_numpy
M="$GD_SRCDIR/tests/fixtures/onnx"
"$PYTHON_NUMPY" - "$TMP" <<'PY'
import sys, numpy as np
d = sys.argv[1]
np.save(d + "/x.npy", np.arange(6, dtype=np.float32).reshape(2, 3))
np.save(d + "/shape.npy", np.array([3, -1], np.int64))
np.savez(d + "/both.npz", x=np.arange(6, dtype=np.float32).reshape(2, 3),
         shape=np.array([1, 6], np.int32))
np.save(d + "/x3.npy", np.linspace(-1, 1, 36, dtype=np.float32).reshape(3, 3, 4))
PY
# Two inputs by name; the shape input is int64 and read as Reshape's shape.
"$AGENT" run --model "$M/reshape_input.onnx" --input x="$TMP/x.npy" \
    --input shape="$TMP/shape.npy" --out "$TMP/a" --json >"$TMP/a.json"
# One archive holding both (its int32 shape widens to the declared int64).
"$AGENT" run --model "$M/reshape_input.onnx" --input "$TMP/both.npz" --out "$TMP/b" --json \
    >"$TMP/b.json"
# A TensorProto input file.
"$AGENT" run --model "$M/add_relu.onnx" --input "$M/tensor_f32.pb" --out "$TMP/c" --json >"$TMP/c.json"
# Folds for a batch of 3.
"$AGENT" run --model "$M/fold.onnx" --input "$TMP/x3.npy" --out "$TMP/d" --json >"$TMP/d.json"
"$PYTHON_NUMPY" - "$TMP" <<'PY'
import json, sys, numpy as np
d = sys.argv[1]
a, b, c, f = (json.load(open(f"{d}/{k}/run.json")) for k in "abcd")
assert [i["name"] for i in a["inputs"]] == ["x", "shape"], a["inputs"]
assert a["inputs"][1]["dtype"] == "int64" and a["input"]["file"].endswith("x.npy")
assert a["layers"][0]["shape"] == [3, 2], a["layers"][0]
assert b["layers"][0]["shape"] == [1, 6] and b["inputs"][1]["key"] == "shape", b["inputs"]
y = np.load(f"{d}/b/layers/" + b["layers"][0]["file"].split("/")[1])
assert (y == np.arange(6, dtype=np.float32).reshape(1, 6)).all(), y
assert [l["name"] for l in c["layers"]] == ["plus", "act"], c["layers"]
folded = {x["node"]: x for x in f["folded"]}
assert folded["shape"]["outputs"][0]["shape"] == [3] and not folded["shape"]["at_load"]
assert folded["zero"]["op"] == "Constant" and folded["zero"]["at_load"], folded["zero"]
assert folded["cat"]["outputs"][0]["shape"] == [2], folded["cat"]
assert [l["name"] for l in f["layers"]] == ["flatten", "act"] and f["layers"][1]["shape"] == [3, 12]
print("inputs by name and by archive, a .pb input, folds: as expected")
PY
# Errors: a missing input, a name the model lacks, a broken file, ops this build lacks.
expect_exit 3 "$AGENT" run --model "$M/reshape_input.onnx" --input x="$TMP/x.npy" --out "$TMP/e"
grep -q "no --input for input shape (the model's inputs: x, shape)" "$TMP/err.txt" || fail "missing input"
expect_exit 3 "$AGENT" run --model "$M/reshape_input.onnx" --input y="$TMP/x.npy" \
    --input shape="$TMP/shape.npy" --out "$TMP/e"
grep -q "y is not an input of the model" "$TMP/err.txt" || fail "unknown input name"
expect_exit 3 "$AGENT" run --model "$M/truncated.onnx" --input "$TMP/x.npy" --out "$TMP/e"
grep -q "field graph is cut" "$TMP/err.txt" || fail "truncated model"
expect_exit 5 "$AGENT" run --model "$M/missing_ops.onnx" --input "$TMP/x.npy" --out "$TMP/e"
grep -q "FooBar (2 nodes: foo1, foo2); BazQux (1 node: baz1)" "$TMP/err.txt" || fail "missing ops"
expect_exit 3 "$AGENT" run --model "$M/add_relu.onnx" --input "$TMP/x3.npy" --out "$TMP/e"
[ ! -e "$TMP/e" ] || fail "a failed run left a bundle"
# The op listing: every op of ops.def, on every backend of this build.
"$AGENT" ops --json >"$TMP/ops.json"
"$AGENT" --version | grep -q "ops of [0-9]*" || fail "--version has no op count"
"$PYTHON_NUMPY" - "$TMP/ops.json" "$GD_SRCDIR/engine/core/ops.def" <<'PY'
import json, re, sys
ops = json.load(open(sys.argv[1]))
names = re.findall(r'^GD_OP\(\s*\w+,\s*\w+,\s*"(\w+)"', open(sys.argv[2]).read(), re.M)
assert [o["name"] for o in ops["ops"]] == names, "ops differs from ops.def"
for o in ops["ops"]:
    assert "cpu" in o["backends"] and "cpu64" in o["backends"], o
assert "Shape" in ops["folds"]
print(f"ops: {len(names)} ops of ops.def, backends {ops['backends']}")
PY
