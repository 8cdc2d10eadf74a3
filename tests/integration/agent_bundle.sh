#!/bin/sh
# gpudiff-agent bundle (issue 23 item 4; docs/AGENT.md, "bundle"): a folder of a framework's
# .npy dumps is read in natural order (features.2 before features.10) and says so; --op takes
# a framework's names (Linear, Conv2d, LayerNorm, GELU) as ONNX's, refuses an op it does not
# know by listing the names, and a layer the dumps do not hold; a --map file gives the
# layers' order, ops and reduction lengths, so two dumps compare layer by layer with rounding
# bounds (noise), not as unknown; without any op the command says how to give them.
. ./tests/integration/env.sh
need_numpy

"$PYTHON_NUMPY" - "$TMP" <<'PY'
import os, sys
import numpy as np
d = sys.argv[1]
rng = np.random.default_rng(23)
x = rng.standard_normal((4, 64)).astype(np.float32)
w = rng.standard_normal((64, 32)).astype(np.float32) / 8
for name, bump in (("a", 0.0), ("b", 1.0)):
    os.makedirs(os.path.join(d, name))
    y = (x.astype(np.float64) @ w.astype(np.float64)).astype(np.float32)
    if bump:  # another summation order: a few ulps off, as another GPU would be
        y = np.nextafter(y, np.float32(np.inf)).astype(np.float32)
    h = np.maximum(y, 0)
    for i, t in ((0, x), (2, y), (10, h)):
        np.save(os.path.join(d, name, "features.%d.npy" % i), t)
open(os.path.join(d, "map.json"), "w").write(
    '[{"name": "features.0", "op": "Identity"},'
    ' {"name": "features.2", "op": "Linear", "reduction_len": 64},'
    ' {"name": "features.10", "op": "ReLU"}]')
PY

# the folder's order, said on stderr; no op given: the hint
"$AGENT" bundle --from "$TMP/a" --out "$TMP/plain" >/dev/null 2>"$TMP/plain.err"
cat "$TMP/plain.err"
[ "$(jq -c '[.layers[].name]' "$TMP/plain/run.json")" = '["features.0","features.2","features.10"]' ] ||
    fail "the folder's order: $(jq -c '[.layers[].name]' "$TMP/plain/run.json")"
grep -q "taken in natural order (digits as numbers): features.0, features.2, features.10" \
    "$TMP/plain.err" || fail "no warning naming the order"
grep -q "no layer has an op.*--op LAYER=OP (Linear, Conv2d" "$TMP/plain.err" ||
    fail "no hint at --op"

# --op with a framework's names
"$AGENT" bundle --from "$TMP/a" --out "$TMP/ops" --op features.2=Linear --op features.10=ReLU \
    >/dev/null 2>"$TMP/ops.err"
[ "$(jq -c '[.layers[].op]' "$TMP/ops/run.json")" = '["","Gemm","Relu"]' ] ||
    fail "--op Linear, ReLU: $(jq -c '[.layers[].op]' "$TMP/ops/run.json")"
! grep -q "no layer has an op" "$TMP/ops.err" || fail "the hint with ops given"
expect_exit 2 "$AGENT" bundle --from "$TMP/a" --out "$TMP/x" --op features.2=Dense
grep -q "features.2=Dense: no such op; the names are" "$TMP/err.txt" &&
    grep -q "Linear (Gemm)" "$TMP/err.txt" && grep -q "LayerNorm (LayerNormalization)" "$TMP/err.txt" ||
    fail "an unknown op does not list the names"
expect_exit 2 "$AGENT" bundle --from "$TMP/a" --out "$TMP/x" --op features.3=Linear
grep -q "no layer features.3 (the layers: features.0, features.2, features.10)" "$TMP/err.txt" ||
    fail "a layer the dumps lack was taken"
[ ! -e "$TMP/x" ] || fail "a refused bundle was written"

# --map: order, ops and reduction lengths; both dumps, then their diff has bounds
for s in a b; do
    "$AGENT" bundle --from "$TMP/$s" --out "$TMP/m$s" --map "$TMP/map.json" >/dev/null 2>"$TMP/m.err"
    ! grep -q "natural order" "$TMP/m.err" || fail "a map's order was warned about"
done
jq -e '[.layers[] | [.name, .op, .reduction_len, .discontinuous]] ==
    [["features.0", "Identity", null, false], ["features.2", "Gemm", 64, false],
     ["features.10", "Relu", null, false]]' "$TMP/ma/run.json" >/dev/null ||
    fail "--map's records: $(jq -c '[.layers[] | [.name, .op, .reduction_len]]' "$TMP/ma/run.json")"
"$AGENT" diff "$TMP/ma" "$TMP/mb" --json >"$TMP/diff.json"
jq -e '[.layers[] | .verdict] == ["identical", "noise", "noise"]' "$TMP/diff.json" >/dev/null ||
    fail "the dumps' diff: $(jq -c '[.layers[] | [.name, .verdict]]' "$TMP/diff.json")"
"$AGENT" diff "$TMP/plain" "$TMP/plain" --json >/dev/null
expect_exit 2 "$AGENT" bundle --from "$TMP/a" --out "$TMP/x" --map "$TMP/map.json" --layers features.0
echo '[{"name": "features.7"}]' >"$TMP/bad_map.json"
expect_exit 3 "$AGENT" bundle --from "$TMP/a" --out "$TMP/x" --map "$TMP/bad_map.json"
grep -q "holds no array features.7" "$TMP/err.txt" || fail "a map naming no array"
echo "ok: natural order said, framework op names, unknown ops and layers refused, a map's bounds"
