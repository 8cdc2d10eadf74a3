#!/bin/sh
# tests/bench/gpu_half.sh: float16 and bfloat16 on the GPU machine, in one go (the H200,
# /opt/torch/.venv/bin/python3 with torch), within BUDGET seconds in all (default 85): every
# step has its own time limit, cut to what is left of the budget, logs to LOGS and goes on
# after a failure; a step that no longer fits is skipped and says so; the summary comes last.
#   g12_export  GPT-2 small's shape (12 layers, d_model 768, 12 heads, vocab 50257), random
#               seeded weights, exported in float32 by gpt2_export.py (from the CPU, while
#               the two steps below use the GPU): --dtype then casts the one file to float16
#               and to bfloat16 as model.half() / model.bfloat16() cast the module
#   ops         the cuda op tests: every op against cpu64, then the float16 and bfloat16
#               cases of tests/fixtures/ops/half (tests/engine/backend_ops_cuda.sh)
#   tiny        the exported tiny GPT-2 fixture on cuda in float16 and bfloat16: every layer
#               noise against cpu64's float64 truth of the same rounded weights, and within
#               2x of PyTorch's own half error (the fixture's reference outputs)
#   g12_capture_{float16,bfloat16}  batch 1 x 1024 tokens, every layer captured on cuda
#               (--host-memory 64: larger layers go out in pieces), then g12_diff_dtype:
#               `gpudiff-agent diff` of float16 against bfloat16, which names where they part
#   g12_forward_{float16,bfloat16}  batch 8 x 1024 tokens, no capture (bench_half): the
#               forward's device time, peak device memory, logits (timed alone)
#   g12_check   PyTorch's forward of the same weights in both formats on the same GPU
#               (timed), the float64 truth, gpudiff's logits against both: the float16
#               bound of gpu_half.py (gpudiff's error at most 2x PyTorch's)
# FULL=1 adds (outside the 85 s budget: give BUDGET=600) the 1.5e9-parameter shape gpt2-48
# (48 layers, d_model 1600, 25 heads) at batch 8 x 1024, its export, forward and check, and
# the float16 capture without reduced-precision reductions diffed against the default.
# FULL=only runs gpt2-48's export (or reuses WORK/g48's), forward and check alone.
# usage: OUT=DIR tests/bench/gpu_half.sh BUILD_DIR SHARED_DIR [PYTHON]
# Logs: LOGS (default /tmp/logs/gpu_half), models and bundles under WORK (default
# /tmp/gpu_half); $OUT gets logs.tgz.
set -u
t_start=$(date +%s)
tiny_only=0
if [ "${1:-}" = --tiny ]; then # the tiny step, run by this script under `timeout`
    tiny_only=1
    shift
fi
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
py=${3:-/opt/torch/.venv/bin/python3}
out=${OUT:-$PWD/gpu-logs}
logs=${LOGS:-/tmp/logs/gpu_half}
work=${WORK:-/tmp/gpu_half}
full=${FULL:-0}
budget=${BUDGET:-85}
deadline=$((t_start + budget))
top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" "$logs" "$work"
summary=$logs/summary.txt
export PYTHONUNBUFFERED=1
A=$build/gpudiff-agent
B=$build/tests/bench/bench_half
F=$top/tests/fixtures/onnx/transformers

# ---- tiny: the fixture on cuda against cpu64's truth and PyTorch's outputs ----
tiny() {
    set -e
    for d in float16 bfloat16; do
        "$A" run --model "$F/gpt2_tiny.onnx" --input "input_ids=$F/gpt2_tiny.input_ids.npy" \
            --backend cuda --dtype $d --out "$work/tiny_cuda_$d" --replace
        "$A" run --model "$F/gpt2_tiny.onnx" --input "input_ids=$F/gpt2_tiny.input_ids.npy" \
            --backend cpu64 --dtype $d --out "$work/tiny_t64_$d" --replace
        "$A" diff "$work/tiny_cuda_$d" "$work/tiny_t64_$d" --json >"$work/tiny_diff_$d.json"
        "$A" diff "$work/tiny_cuda_$d" "$work/tiny_t64_$d" | tail -n 4
    done
    "$py" - "$work" "$F" <<'PYEOF'
import json, sys
import numpy as np
work, fix = sys.argv[1], sys.argv[2]
bad = 0
def out(run):
    r = json.load(open("%s/%s/run.json" % (work, run)))
    rec = [l for l in r["layers"] if l["name"] == r["outputs"][0]][0]
    a = np.load("%s/%s/%s" % (work, run, rec["file"]))
    if a.dtype.kind == "V":
        a = (a.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float64), rec["dtype"]
for d in ("float16", "bfloat16"):
    diff = json.load(open("%s/tiny_diff_%s.json" % (work, d)))
    loud = [(l["name"], l["verdict"]) for l in diff["layers"]
            if l["verdict"] not in ("identical", "noise")]
    gd, dt = out("tiny_cuda_" + d)
    t, _ = out("tiny_t64_" + d)
    pt = np.load("%s/gpt2_tiny.torch_%s.npy" % (fix, d)).astype(np.float64)
    s = np.abs(t).max()
    e_gd, e_pt = np.abs(gd - t).max() / s, np.abs(pt - t).max() / s
    ok = not loud and dt == d and e_gd <= 2 * e_pt
    bad += not ok
    print("tiny %s: cuda layers %s, against the truth: loud layers %s; error %.3g, torch's %.3g:"
          " %s" % (d, dt, loud[:3], e_gd, e_pt, "ok" if ok else "FAIL"))
sys.exit(1 if bad else 0)
PYEOF
}
if [ "$tiny_only" = 1 ]; then
    tiny
    exit $?
fi

: >"$summary"
sed -e "s#^GD_SRCDIR=.*#GD_SRCDIR='$top'#" -e "s#^GD_BUILDDIR=.*#GD_BUILDDIR='$build'#" \
    -e "s#^GD_SHARED_DIR=.*#GD_SHARED_DIR='$shared'#" -e "s#^PYTHON_NUMPY=.*#PYTHON_NUMPY='$py'#" \
    "$top/tests/integration/env.sh.in" >"$build/tests/integration/env.sh.gpu_half" &&
    mv "$build/tests/integration/env.sh.gpu_half" "$build/tests/integration/env.sh"

# step NAME SECONDS COMMAND...: runs COMMAND in BUILD_DIR with a time limit (at most what is
# left of the budget), logs it, records its exit status and time in the summary, and shows
# the end of the log when it failed. A step with under 3 s left is skipped.
step() {
    name=$1; limit=$2; shift 2
    start=$(date +%s)
    left=$((deadline - start))
    [ "$full" = 1 ] && left=$limit
    if [ "$left" -lt 3 ]; then
        echo "$name: SKIPPED (no time left of the ${budget} s budget)" | tee -a "$summary"
        return 1
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    (cd "$build" && timeout "$limit" "$@") >"$logs/$name.log" 2>&1
    rc=$?
    line="$name: exit $rc ($(( $(date +%s) - start )) s)"
    [ "$rc" = 124 ] && line="$line TIMED OUT after $limit s"
    echo "$line" | tee -a "$summary"
    [ "$rc" = 0 ] || tail -n 6 "$logs/$name.log"
    return $rc
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader |
    tee "$logs/gpu.txt"
"$A" --version | head -3 >>"$logs/gpu.txt"

# ---- one model at batch 8: gpudiff's forward in both formats, then PyTorch's check ----
forward() { # NAME DIR CONFIG [LIMIT_S: each forward's; the check gets twice it]
    flim=${4:-25}
    for d in float16 bfloat16; do
        step "$1_forward_$d" "$flim" "$B" "$2/model.onnx" --dtype $d --repeats 3 \
            --out "$2/gd_$d.npy" "input_ids=$2/model.input_ids.npy"
        grep -E 'forward_ms_median|device_peak_bytes|load_s|cast_s|output' \
            "$logs/$1_forward_$d.log" | sed "s/^/  $1 $d: /" >>"$summary"
    done
    step "$1_check" $((flim * 2 > 40 ? flim * 2 : 40)) "$py" "$top/tests/bench/gpu_half.py" check \
        "$3" "$2/model.input_ids.npy" \
        "$2/gd_float16.npy" "$2/gd_bfloat16.npy" --json "$logs/$1_check.json"
    grep -E 'gpudiff .* torch|torch_ms' "$logs/$1_check.log" | sed 's/^/  /' >>"$summary"
    rm -f "$2/gd_float16.npy" "$2/gd_bfloat16.npy"
}
# ---- FULL=only: gpt2-48 alone (one device call of at most 10 minutes); its export is
# reused when WORK/g48/model.onnx is there already (gpu_fp.sh FULL=only writes the same file)
if [ "$full" = only ]; then
    full=1 # every step gets its own limit, not the 85 s budget
    X="$py $top/tests/bench/gpt2_export.py"
    mkdir -p "$work/g48"
    if [ -f "$work/g48/model.onnx" ] && [ -f "$work/g48/model.input_ids.npy" ]; then
        echo "g48: the export in $work/g48 reused" | tee -a "$summary"
    else
        step g48_export 420 $X export gpt2-48 "$work/g48/model.onnx" --batch 8 --seq 1024
        grep '^exported' "$logs/g48_export.log" | tail -n 1 | cut -c1-300 >>"$summary"
    fi
    [ -f "$work/g48/model.onnx" ] && forward g48 "$work/g48" gpt2-48 100
    (cd "$logs" && tar czf "$out/logs.tgz" --exclude='*.npy' .)
    echo "==== summary ($(( $(date +%s) - t_start )) s) ===="
    cat "$summary"
    exit 0
fi

# ---- the export from the CPU, while the op tests and the tiny fixture use the GPU ----
X="$py $top/tests/bench/gpt2_export.py"
mkdir -p "$work/g12" "$work/g48"
step g12_export 45 $X export gpt2-12 "$work/g12/model.onnx" --batch 8 --seq 1024 &
export_pid=$!
step ops 35 sh "$top/tests/engine/backend_ops_cuda.sh"
grep -E '^[0-9]+%: Checks' "$logs/ops.log" | sed 's/^/  ops: /' >>"$summary"
step tiny 25 sh "$top/tests/bench/gpu_half.sh" --tiny "$build" "$shared" "$py"
grep '^tiny ' "$logs/tiny.log" | sed 's/^/  /' >>"$summary"
wait "$export_pid"
grep '^exported' "$logs/g12_export.log" | tail -n 1 | cut -c1-300 | sed 's/^/  /' >>"$summary"

# ---- gpt2-12 at batch 1, every layer captured: where float16 and bfloat16 part ----
if [ -f "$work/g12/model.onnx" ]; then
    "$py" -c "import numpy as np; np.save('$work/g12/ids1.npy', np.load('$work/g12/model.input_ids.npy')[:1])"
    capture() { # TAG DTYPE_ARGS...
        tag=$1; shift
        step "g12_capture_$tag" 30 "$A" run --model "$work/g12/model.onnx" \
            --input "input_ids=$work/g12/ids1.npy" --backend cuda "$@" --host-memory 64 \
            --out "$work/g12_b1_$tag" --replace
    }
    capture float16 --dtype float16 &
    cap_pid=$!
    capture bfloat16 --dtype bfloat16
    wait "$cap_pid"
    for tag in float16 bfloat16; do
        grep -i 'peak device memory' "$logs/g12_capture_$tag.log" | sed "s/^/  $tag: /" >>"$summary"
    done
    "$py" -c "import json; r=json.load(open('$work/g12_b1_float16/run.json')); print('  capture float16: %d layers, %.1f s, memory %s' % (len(r['layers']), r['duration_us']/1e6, r.get('memory')))" >>"$summary" 2>&1
    # the diff reads bundles on the CPU: it runs beside the timed forwards (device time)
    (step g12_diff_dtype 40 "$A" diff "$work/g12_b1_float16" "$work/g12_b1_bfloat16" \
         >/dev/null 2>&1
     grep -A4 '^The difference starts\|^No layer\|^Every layer' "$logs/g12_diff_dtype.log" |
         head -n 6 | sed 's/^/  diff float16 bfloat16: /' >"$logs/g12_diff_dtype.sum") &
    diff_pid=$!
else
    echo "g12: no export (see g12_export.log)" >>"$summary"
    tail -n 5 "$logs/g12_export.log"
fi

if [ -f "$work/g12/model.onnx" ]; then
    forward g12 "$work/g12" gpt2-12
    wait "$diff_pid"
    cat "$logs/g12_diff_dtype.sum" >>"$summary" 2>/dev/null
fi

# ---- FULL=1: the reduction knob and gpt2-48 ----
if [ "$full" = 1 ] && [ -f "$work/g12/model.onnx" ]; then
    capture float16_rr_off --dtype float16 --reduced-reduction off
    step g12_diff_rr 120 "$A" diff "$work/g12_b1_float16" "$work/g12_b1_float16_rr_off"
    grep -A3 '^The difference starts\|^No layer\|^Every layer\|^The runs\|identical' \
        "$logs/g12_diff_rr.log" | tail -n 4 | sed 's/^/  diff rr on off: /' >>"$summary"
    rm -rf "$work/g12_b1_float16_rr_off"
fi
if [ "$full" = 1 ]; then
    step g48_export 420 $X export gpt2-48 "$work/g48/model.onnx" --batch 8 --seq 1024
    grep '^exported' "$logs/g48_export.log" | tail -n 1 | cut -c1-300 >>"$summary"
    [ -f "$work/g48/model.onnx" ] && forward g48 "$work/g48" gpt2-48 100
fi

(cd "$logs" && tar czf "$out/logs.tgz" --exclude='*.npy' .)
echo "==== summary ($(( $(date +%s) - t_start )) s) ===="
cat "$summary"
