#!/bin/sh
# The seed case as ONNX: tests/onnx/seed_to_onnx.py writes the JSON model and its weights as
# model.onnx; both run on cpu and every layer must have the same name, op, shape and bits
# (the sha256 of its data in run.json, and the .npy files byte for byte).
. ./tests/integration/env.sh
need_seed
need_numpy
"$PYTHON_NUMPY" -c 'import onnx' 2>/dev/null || skip "$PYTHON_NUMPY has no onnx module (python3-onnx)"
"$PYTHON_NUMPY" "$GD_SRCDIR/tests/onnx/seed_to_onnx.py" "$SEED_MODEL" "$SEED_DIR/initializer" \
    "$TMP/model.onnx"
"$AGENT" run --model "$TMP/model.onnx" --input "$SEED_DIR/input.npz" --input-key inp \
    --backend cpu --out "$TMP/onnx" --json >"$TMP/onnx.json"
"$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
    --input "$SEED_DIR/input.npz" --input-key inp --backend cpu --out "$TMP/json" --json \
    >"$TMP/json.json"
"$PYTHON_NUMPY" - "$TMP/onnx" "$TMP/json" <<'PY'
import json, sys
a, b = (json.load(open(d + "/run.json")) for d in sys.argv[1:3])
la, lb = a["layers"], b["layers"]
if len(la) != len(lb):
    sys.exit(f"FAIL: {len(la)} layers from ONNX, {len(lb)} from JSON")
for x, y in zip(la, lb):
    for k in ("name", "op", "dtype", "shape", "sha256", "file"):
        if x[k] != y[k]:
            sys.exit(f"FAIL: layer {x['index']} {k}: ONNX {x[k]}, JSON {y[k]}")
print(f"{len(la)} layers, the same bits: " + ", ".join(x["name"] for x in la))
PY
for f in "$TMP"/json/layers/*.npy; do
    cmp "$f" "$TMP/onnx/layers/$(basename "$f")" || fail "$(basename "$f") differs"
done
