#!/bin/sh
# transformer_half.sh: exported transformers (tests/fixtures/onnx/transformers, made by
# tests/bench/gpt2_export.py with torch.onnx.export) through gpudiff-agent on cpu and cpu64,
# in float32, float64 and, with --dtype, in float16 and bfloat16:
#   - cpu64 against PyTorch's float64 forward of the module, cpu against its float32 one;
#   - with --dtype, every float layer stored in the half format on cpu and in float64 on
#     cpu64, knobs.dtype recorded, and `diff` of cpu against cpu64 (the float64 truth of the
#     same rounded weights) noise at every layer;
#   - cpu's half output within 2x of PyTorch's own half error against that truth;
#   - float16 against bfloat16: the diff starts at the token embedding (its weights rounded
#     differently), explained by the arithmetic;
#   - the float16 export (model.half() before export) runs as exported and gives the bits of
#     --dtype float16 on the float32 export;
#   - BERT's additive mask, float32's lowest value in the file, becomes -inf in float16 and
#     (1 - mask) * -inf is NaN: cast the module before exporting (docs/ONNX.md).
. ./tests/integration/env.sh
need_numpy
F="$GD_SRCDIR/tests/fixtures/onnx/transformers"
G="--model $F/gpt2_tiny.onnx --input input_ids=$F/gpt2_tiny.input_ids.npy"
B="--model $F/bert_tiny.onnx --input input_ids=$F/bert_tiny.input_ids.npy \
--input attention_mask=$F/bert_tiny.attention_mask.npy"

run() { # OUT ARGS...: a run that must succeed
    out=$1; shift
    "$AGENT" run "$@" --out "$TMP/$out" >"$TMP/$out.txt" 2>&1 || {
        cat "$TMP/$out.txt"; fail "run $out: $*"; }
}
run g64 $G --backend cpu64
run g32 $G --backend cpu
run b64 $B --backend cpu64
run b32 $B --backend cpu
for d in float16 bfloat16; do
    run g_cpu_$d $G --backend cpu --dtype $d
    run g_t64_$d $G --backend cpu64 --dtype $d
    run b_cpu_$d $B --backend cpu --dtype $d
done
run g_export16 --model "$F/gpt2_tiny_f16.onnx" --input "input_ids=$F/gpt2_tiny.input_ids.npy" \
    --backend cpu
for d in float16 bfloat16; do
    "$AGENT" diff "$TMP/g_cpu_$d" "$TMP/g_t64_$d" --json >"$TMP/truth_$d.json" ||
        fail "diff cpu against cpu64 in $d"
done
"$AGENT" diff "$TMP/g_cpu_float16" "$TMP/g_cpu_bfloat16" --json >"$TMP/f16_bf16.json" ||
    fail "diff float16 against bfloat16"
"$AGENT" diff "$TMP/g_export16" "$TMP/g_cpu_float16" --json >"$TMP/export16.json" ||
    fail "diff of the float16 export against --dtype float16"

"$PYTHON_NUMPY" - "$TMP" "$F" <<'EOF'
import json, sys
import numpy as np
tmp, fix = sys.argv[1], sys.argv[2]
bad = []

def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        bad.append(what)

def layers(run):
    return json.load(open("%s/%s/run.json" % (tmp, run)))["layers"]

def output(run):
    r = json.load(open("%s/%s/run.json" % (tmp, run)))
    rec = [l for l in r["layers"] if l["name"] == r["outputs"][0]][0]
    a = np.load("%s/%s/%s" % (tmp, run, rec["file"]))
    if a.dtype.kind == "V":  # bfloat16: the upper half of a float32
        a = (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64)

def rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())

# Agreement with PyTorch on the module. The file holds constants PyTorch's float64 run takes
# in float64 (the tanh Gelu's sqrt(2/pi) and 0.044715, LayerNormalization's epsilon) as
# float32: each moves by at most 2^-24 = 6e-8 relative, so cpu64 is held to 1e-7 of the
# output's scale; float32 backends to docs/ONNX.md's 1e-3 for whole networks.
for m in ("gpt2_tiny", "bert_tiny"):
    k = m[0]
    e64 = rel(output(k + "64"), np.load("%s/%s.torch_float64.npy" % (fix, m)))
    e32 = rel(output(k + "32"), np.load("%s/%s.torch_float32.npy" % (fix, m)))
    check(e64 <= 1e-7, "%s: cpu64 against torch float64: %.3g <= 1e-7" % (m, e64))
    check(e32 <= 1e-3, "%s: cpu against torch float32: %.3g <= 1e-3" % (m, e32))

for d in ("float16", "bfloat16"):
    floats = [l["dtype"] for l in layers("g_cpu_" + d) if l["dtype"].startswith(("float", "bf"))]
    check(set(floats) == {d}, "gpt2 --dtype %s on cpu: every float layer is %s (%s)"
          % (d, d, sorted(set(floats))))
    floats = [l["dtype"] for l in layers("g_t64_" + d) if l["dtype"].startswith(("float", "bf"))]
    check(set(floats) == {"float64"}, "gpt2 --dtype %s on cpu64: float layers are float64" % d)
    knobs = json.load(open("%s/g_cpu_%s/run.json" % (tmp, d)))["knobs"]
    check(knobs.get("dtype") == d, "knobs.dtype is %s" % knobs.get("dtype"))
    diff = json.load(open("%s/truth_%s.json" % (tmp, d)))
    loud = [(l["name"], l["verdict"]) for l in diff["layers"]
            if l["verdict"] not in ("identical", "noise")]
    check(not loud, "%s: cpu against its float64 truth is noise at every layer %s" % (d, loud[:3]))
    # PyTorch's half forward against the same truth (cpu64 of the same rounded weights):
    # two correct half implementations are each within their rounding of it
    t = output("g_t64_" + d)
    mine = rel(output("g_cpu_" + d), t)
    torch_err = rel(np.load("%s/gpt2_tiny.torch_%s.npy" % (fix, d)), t)
    check(mine <= 2 * torch_err, "%s: cpu's error against the truth %.3g <= 2 x torch's %.3g"
          % (d, mine, torch_err))

diff = json.load(open(tmp + "/f16_bf16.json"))
first = diff["first_divergent"]
rec = [l for l in diff["layers"] if l["name"] == first]
check(first == "/wte/Gather", "float16 against bfloat16 starts at %s" % first)
check(bool(rec) and rec[0].get("explained_by_arithmetic") is True,
      "... explained by the arithmetic (%s)" % (rec[0].get("math") if rec else None))

diff = json.load(open(tmp + "/export16.json"))
same = [l["verdict"] for l in diff["layers"]]
check(set(same) == {"identical"}, "the float16 export gives --dtype float16's bits (%d layers)"
      % len(same))

b16 = output("b_cpu_float16")
check(bool(np.isnan(b16).all()), "bert --dtype float16: the -inf mask makes NaN everywhere")
sys.exit(1 if bad else 0)
EOF
