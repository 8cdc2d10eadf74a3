#!/bin/sh
# tests/bench/gpu_fp.sh: the GPU checks and figures of fingerprint capture (fp, fp2), in one
# go, for a machine with an NVIDIA GPU where this checkout was built with CUDA (`make -j2 &&
# make -j2 check TESTS= && make -j2 bench`):
#   1. bit-for-bit agreement of the CUDA fingerprint kernels with the host definitions on
#      real captures: the seed case and a ResNet-50-shaped model (batch 4) run on cuda with
#      --capture full record the kernels' fingerprint next to each tensor; fp_verify
#      recomputes every layer's on the host from its file and compares every field;
#   2. bench_fp_cuda: the kernels' device time against a device-to-device copy of the same
#      bytes (float32, 1 MiB to 4 GiB; target at most 1.5x, 4 GiB under 1 s), each size's
#      device fingerprint checked bit for bit against the host's (up to 1 GiB);
#   3. the cost: wall time of `run --backend "$be"` with --capture none, fingerprint and full
#      (median of REPEATS runs each, alternating), the engine's own duration (run.json's
#      duration_us: gd_session_run, capture and bundle writes included) and the bundle's bytes
#      (du -sb: what `push` uploads), for the seed case, ResNet-50 and
#   4. GPT-2 small's shape (gpt2_export.py gpt2-12: 12 layers, d_model 768, exported in
#      float32 from the CPU while steps 1-2 use the GPU) run with --dtype float16 at batch 8 x
#      1024 tokens: none and fingerprint twice each; full at batch 1 (every layer's tensor at
#      batch 8 is about 8x the batch-1 bundle and would take most of a minute to write), with
#      a fingerprint run at batch 1 beside it for the bytes; then bench_half
#      --fingerprint-cost: warm in-process runs with every layer's fingerprint against none.
#      The summary gives fingerprint/none against the 1.1x target and the bytes against full.
# FULL=1 adds full capture at batch 8 (when the disk has room for 8x the batch-1 bundle),
# and the same steps for the 1.5e9-parameter gpt2-48 (48 layers, d_model 1600; its export
# alone takes minutes). FULL=only runs gpt2-48's steps alone, for a call limited to 10
# minutes: its export (under 600 s), then the runs.
# GPU_FP_BACKEND=cpu: a dry run on a machine without a GPU (bench_fp_cuda exits 77; the
# exports need torch, so step 4 runs the tiny GPT-2 fixture of tests/fixtures/onnx instead).
# usage: tests/bench/gpu_fp.sh BUILD_DIR SHARED_DIR [PYTHON_WITH_TORCH]
# Logs under /tmp/logs/gpu_fp, a tgz of them in $OUT; a summary is printed last.
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
py=${3:-/opt/torch/.venv/bin/python3}
out=${OUT:-$PWD/gpu-fp}
logs=/tmp/logs/gpu_fp
work=${TMPDIR:-/tmp}/gpu_fp_work
rm -rf "$logs" "$work"
mkdir -p "$out" "$logs" "$work"
top=$(cd "$(dirname "$0")/../.." && pwd)
agent=$build/gpudiff-agent
be=${GPU_FP_BACKEND:-cuda} # cpu: a dry run of the script on a machine without a GPU
full=${FULL:-0}
t_start=$(date +%s)
verify=$build/tests/bench/fp_verify
seed=$shared/cases/lenet-11-821
seed_model=$top/tests/fixtures/models/lenet-11-821.json
summary=$logs/summary.txt
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }
say "gpu: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1)"
# step NAME LIMIT CMD...: runs CMD under timeout LIMIT s, logs to NAME.log, goes on on failure
step() {
    name=$1; lim=$2; shift 2
    start=$(date +%s.%N)
    timeout "$lim" "$@" >"$logs/$name.log" 2>&1
    rc=$?
    echo "$name: exit $rc ($(awk "BEGIN{print $(date +%s.%N) - $start}") s)" >>"$logs/steps.txt"
    [ "$rc" = 0 ] || echo "  $name: exit $rc: $(tail -n 1 "$logs/$name.log")" | tee -a "$summary"
    return $rc
}

seed_args="--model $seed_model --weights-dir $seed/initializer --input $seed/input.npz \
--input-key inp"
r=$work/resnet
res_args="--model $r/resnet50/model.json --input $r/resnet50/input.npy"

# ---- the gpt2-12 export, from the CPU while steps 1 and 2 use the GPU ----
if [ "$be" != cpu ] && [ "$full" != only ]; then
    mkdir -p "$work/g12"
    step g12_export 120 "$py" "$top/tests/bench/gpt2_export.py" export gpt2-12 \
        "$work/g12/model.onnx" --batch 8 --seq 1024 &
    g12_pid=$!
fi

# FULL=only: gpt2-48 alone (one device call of at most 10 minutes), from its export on
[ "$full" = only ] && base=0 || base=1
if [ "$base" = 1 ]; then
# ---- 1. agreement on real captures ----
step seed_full 30 "$agent" run $seed_args --backend "$be" --capture full --out "$work/seed_full" \
    --replace
step seed_verify 30 "$verify" "$work/seed_full"
say "seed fp_verify (cuda kernels vs host): exit $? $(tail -n 1 "$logs/seed_verify.log")"
grep -m 3 '^layer' "$logs/seed_verify.log" | tee -a "$summary"

step resnet_export 40 "$py" "$top/tests/bench/gpu_diag_resnet.py" "$r" 4
say "resnet export: exit $?"
step resnet_full 40 "$agent" run $res_args --backend "$be" --capture full --out "$work/res_full" \
    --replace
step resnet_verify 60 "$verify" "$work/res_full"
say "resnet fp_verify (cuda kernels vs host): exit $? $(tail -n 1 "$logs/resnet_verify.log")"
grep -m 3 '^layer' "$logs/resnet_verify.log" | tee -a "$summary"

# ---- 2. the kernels against a device-to-device copy (exits 77 without a GPU) ----
step bench_fp_cuda 120 "$build/tests/bench/bench_fp_cuda"
say "bench_fp_cuda: exit $?"
grep -E '^(device|[0-9]|  [0-9].*(MISMATCH|check)|bench_fp_cuda)' "$logs/bench_fp_cuda.log" |
    sed 's/^/  /' | tee -a "$summary"

fi # base

# ---- 3, 4. the cost: none / fingerprint / full, alternating ----
# time_runs CASE REPEATS LIMIT "MODES" ARGS...: REPEATS rounds of `run ARGS --capture MODE`
# for each mode, alternating; appends "CASE MODE WALL_S DURATION_S" to times.txt (duration:
# run.json's duration_us) and, from the first round, "CASE MODE BYTES" to bytes.txt
time_runs() {
    c=$1; n=$2; lim=$3; modes=$4; shift 4
    i=0
    while [ "$i" -lt "$n" ]; do
        for m in $modes; do
            o=$work/t_${c}_${m}
            s=$(date +%s.%N)
            timeout "$lim" "$agent" run "$@" --backend "$be" --capture "$m" --out "$o" \
                --replace >>"$logs/time_$c.log" 2>&1
            rc=$?
            e=$(awk "BEGIN{print $(date +%s.%N) - $s}")
            if [ "$rc" = 0 ]; then
                d=$("$py" -c 'import json, sys
print(json.load(open(sys.argv[1]))["duration_us"] / 1e6)' "$o/run.json" 2>/dev/null) || d=nan
                echo "$c $m $e $d" >>"$logs/times.txt"
                [ "$i" = 0 ] && du -sb "$o" | sed "s#^\([0-9]*\).*#$c $m \1#" >>"$logs/bytes.txt"
                # what full capture would write: every layer's tensor bytes (shapes and
                # dtypes from run.json; .npy headers left out), for runs whose full capture
                # is not written (G48_B1_FULL=0)
                [ "$i" = 0 ] && [ "$m" = fingerprint ] && "$py" -c 'import json, sys
size = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4,
        "int8": 1, "uint8": 1, "bool": 1}
n = 0
for l in json.load(open(sys.argv[1]))["layers"]:
    e = 1
    for d in l["shape"]:
        e *= d
    n += e * size[l["dtype"]]
print(sys.argv[2], n)' "$o/run.json" "$c" >>"$logs/tensor_bytes.txt" 2>>"$logs/time_$c.log"
            else
                say "  time $c $m: exit $rc$([ "$rc" = 124 ] && echo " (over its $lim s)")"
            fi
        done
        i=$((i + 1))
    done
    echo "$c rounds $(awk "BEGIN{print $(date +%s) - $t_start}") s into the script" \
        >>"$logs/steps.txt"
}
if [ "$base" = 1 ]; then
    time_runs seed 3 60 "none fingerprint full" $seed_args
    rm -rf "$work"/t_seed_*
    [ -f "$r/resnet50/model.json" ] && time_runs resnet 2 60 "none fingerprint full" $res_args
    rm -rf "$work"/t_resnet_*
fi

# gpt2 NAME DIR LIMIT: a decoder's runs (each under LIMIT s, batch 1's full capture and the
# warm runs under 2 x LIMIT) in float16: none and fingerprint at the exported batch (8),
# fingerprint and full at batch 1, FULL=1 full at batch 8 where the disk has room; then
# bench_half's warm runs with and without every layer's fingerprint
gpt2() {
    gn=$1; gdir=$2; glim=$3 # not n, g, lim: time_runs and step use those names
    ids8=$gdir/model.input_ids.npy
    "$py" -c "import numpy as np; np.save('$gdir/ids1.npy', np.load('$ids8')[:1])"
    args8="--model $gdir/model.onnx --input input_ids=$ids8 --dtype float16"
    args1="--model $gdir/model.onnx --input input_ids=$gdir/ids1.npy --dtype float16"
    time_runs "$gn" 2 "$glim" "none fingerprint" $args8
    b1modes="fingerprint full"
    [ "$gn" = g48 ] && [ "${G48_B1_FULL:-1}" = 0 ] && b1modes=fingerprint
    time_runs "${gn}b1" 1 $((2 * glim)) "$b1modes" $args1
    b1=$(awk -v c="${gn}b1" '$1 == c && $2 == "full" {print $3}' "$logs/bytes.txt")
    rm -rf "$work"/t_"${gn}"*
    if [ "$full" != 0 ] && [ -n "$b1" ]; then
        avail=$(df -B1 --output=avail "$work" | tail -n 1)
        if [ "$avail" -gt $((b1 * 10 + (4 << 30))) ]; then
            time_runs "$gn" 1 600 "full" $args8
        else
            say "  $gn full at batch 8: not run: ~8x the batch-1 bundle ($b1 bytes) needs more" \
                "than the $avail bytes free"
        fi
        rm -rf "$work"/t_"${gn}"_full
    fi
    step "${gn}_fpcost" $((2 * glim)) "$build/tests/bench/bench_half" "$gdir/model.onnx" \
        --backend "$be" --dtype float16 --repeats 5 --fingerprint-cost "input_ids=$ids8"
    say "$gn bench_half --fingerprint-cost: exit $?"
    grep -E '^(forward_ms_median|run_|fingerprint_layers|device_peak)' "$logs/${gn}_fpcost.log" |
        sed "s/^/  $gn warm: /" | tee -a "$summary"
}
if [ "$base" = 0 ]; then
    :
elif [ "$be" = cpu ]; then # the dry run: the tiny fixture by the same exporter, no torch needed
    mkdir -p "$work/g12"
    cp "$top/tests/fixtures/onnx/transformers/gpt2_tiny.onnx" "$work/g12/model.onnx"
    cp "$top/tests/fixtures/onnx/transformers/gpt2_tiny.input_ids.npy" \
        "$work/g12/model.input_ids.npy"
    say "g12: the dry run: gpt2_tiny (2 layers, d_model 32, batch 2 x 16) stands in"
else
    wait "$g12_pid"
    grep '^exported' "$logs/g12_export.log" | tail -n 1 | cut -c1-200 | sed 's/^/  /' |
        tee -a "$summary"
fi
[ -f "$work/g12/model.onnx" ] && gpt2 g12 "$work/g12" 60
if [ "$full" != 0 ] && [ "$be" != cpu ]; then
    mkdir -p "$work/g48"
    if [ -n "${G48_DIR:-}" ] && [ -f "$G48_DIR/model.onnx" ] && [ -f "$G48_DIR/model.input_ids.npy" ]
    then
        rmdir "$work/g48" && ln -s "$G48_DIR" "$work/g48"
        say "g48: the export in $G48_DIR reused"
    else
    step g48_export 420 "$py" "$top/tests/bench/gpt2_export.py" export gpt2-48 \
        "$work/g48/model.onnx" --batch 8 --seq 1024
    grep '^exported' "$logs/g48_export.log" | tail -n 1 | cut -c1-200 | sed 's/^/  /' |
        tee -a "$summary"
    fi
    [ -f "$work/g48/model.onnx" ] && gpt2 g48 "$work/g48" 150
fi

"$py" - "$logs" "$be" <<'PY' | tee -a "$summary"
import os, re, statistics, sys
logs, be = sys.argv[1], sys.argv[2]
wall, dur, size = {}, {}, {}
def read(name, n):
    rows = []
    try:
        for line in open(os.path.join(logs, name)):
            f = line.split()
            if len(f) == n:
                rows.append(f)
    except OSError as e:
        print("%s: %s" % (name, e))
    return rows
for c, m, w, d in read("times.txt", 4):
    wall.setdefault((c, m), []).append(float(w))
    dur.setdefault((c, m), []).append(float(d))
for c, m, v in read("bytes.txt", 3):
    size[(c, m)] = int(v)
tensor = {c: int(v) for c, v in read("tensor_bytes.txt", 2)}
def med(d, c, m):
    return statistics.median(d[(c, m)]) if (c, m) in d else None
def modes_line(label, d, c):
    none = med(d, c, "none")
    parts = []
    for m in ("none", "fingerprint", "full"):
        v = med(d, c, m)
        if v is None:
            continue
        p = "%s %.3f s" % (m, v)
        if none and m != "none":
            p += " (%.3fx none)" % (v / none)
        parts.append(p)
    if parts:
        print("%s %s (median of %d): %s" % (c, label, max(len(d.get((c, m), []))
              for m in ("none", "fingerprint", "full")), ", ".join(parts)))
def ratio(a, b):
    return "%d / %d = %.4fx" % (a, b, a / b) if a is not None and b else "n/a"
def warm(c):
    try:
        txt = open(os.path.join(logs, "%s_fpcost.log" % c)).read()
    except OSError:
        return None
    m = re.search(r"^run_fingerprint_ratio=([0-9.]+)", txt, re.M)
    return float(m.group(1)) if m else None
for c in ("seed", "resnet", "g12", "g12b1", "g48", "g48b1"):
    if not any(k[0] == c for k in wall):
        if c in ("seed", "resnet", "g12"):
            print("%s: no timing" % c)
        continue
    modes_line("wall", wall, c)
    modes_line("engine duration", dur, c)
    if c in ("seed", "resnet"):
        print("%s bundle bytes: fingerprint / full %s" % (
            c, ratio(size.get((c, "fingerprint")), size.get((c, "full")))))
for c in ("g12", "g48"):
    if (c, "none") not in wall:
        continue
    w = [med(x, c, "fingerprint") / med(x, c, "none") if med(x, c, "fingerprint") else None
         for x in (wall, dur)]
    k = warm(c)
    fmt = lambda v: "%.3fx" % v if v is not None else "n/a"
    ok = [v for v in w + [k] if v is not None]
    print("%s fingerprint / none, float16, %s: wall %s, engine duration %s, warm in-process "
          "(bench_half) %s; target <= 1.1x: %s" % (
              c, "batch 8 x 1024" if be != "cpu" else "dry run on the cpu", fmt(w[0]),
              fmt(w[1]), fmt(k), "met" if ok and max(ok) <= 1.1 else "MISSED" if ok else "n/a"))
    f8, f1, full1 = size.get((c, "fingerprint")), size.get((c + "b1", "fingerprint")), \
        size.get((c + "b1", "full"))
    full8 = size.get((c, "full"))
    line = ("%s bundle bytes: fingerprint at the export's batch (8) %s; at batch 1 "
            "fingerprint / full %s") % (
        c, f8, ratio(f1, full1))
    line += ("; at batch 8 fingerprint / full %s" % ratio(f8, full8) if full8 else
             "; full at batch 8 not run (FULL=1 runs it where the disk has room)")
    for b in (c, c + "b1"):
        if b in tensor and size.get((b, "fingerprint")):
            line += ("; %s: every layer's tensor bytes (what full capture writes, headers "
                     "aside) %d, fingerprint / that %.5fx" % (
                         "batch 8" if b == c else "batch 1", tensor[b],
                         size[(b, "fingerprint")] / tensor[b]))
    print(line)
PY
rm -rf "$work"
tar czf "$out/logs.tgz" -C /tmp/logs gpu_fp 2>/dev/null
echo "---- steps"
cat "$logs/steps.txt"
say "total: $(( $(date +%s) - t_start )) s"
echo "---- summary"
cat "$summary"
