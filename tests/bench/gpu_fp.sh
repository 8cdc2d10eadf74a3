#!/bin/sh
# tests/bench/gpu_fp.sh: the GPU checks and figures of fingerprint capture (fp), in one go,
# for a machine with an NVIDIA GPU where this checkout was built with CUDA (`make -j2 &&
# make -j2 check TESTS= && make -j2 bench`):
#   1. bit-for-bit agreement of the CUDA fingerprint kernels with the host definitions on
#      real captures: the seed case and a ResNet-50-shaped model (batch 4) run on cuda with
#      --capture full record the kernels' fingerprint next to each tensor; fp_verify
#      recomputes every layer's on the host from its file and compares every field;
#   2. the cost: wall time of `run --backend "$be"` with --capture none, fingerprint and full
#      (median of REPEATS runs each, alternating), and the bundle's bytes.
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

# ---- 2. the cost: none / fingerprint / full, alternating, REPEATS each ----
# time_modes CASE REPEATS ARGS: appends "CASE MODE SECONDS" lines to times.txt
time_modes() {
    c=$1; n=$2; shift 2
    i=0
    while [ "$i" -lt "$n" ]; do
        for m in none fingerprint full; do
            s=$(date +%s.%N)
            timeout 60 "$agent" run "$@" --backend "$be" --capture "$m" --out "$work/t_${c}_${m}" \
                --replace >>"$logs/time_$c.log" 2>&1
            rc=$?
            e=$(awk "BEGIN{print $(date +%s.%N) - $s}")
            [ "$rc" = 0 ] && echo "$c $m $e" >>"$logs/times.txt" ||
                echo "time $c $m: exit $rc" >>"$summary"
            if [ "$i" = 0 ]; then
                du -sb "$work/t_${c}_${m}" | sed "s#^\([0-9]*\).*#$c $m \1#" \
                    >>"$logs/bytes.txt"
            fi
        done
        i=$((i + 1))
    done
}
time_modes seed 3 $seed_args
[ -f "$r/resnet50/model.json" ] && time_modes resnet 2 $res_args

"$py" - "$logs" <<'PY' | tee -a "$summary"
import os, statistics, sys
logs = sys.argv[1]
t, b = {}, {}
for name, d in (("times.txt", t), ("bytes.txt", b)):
    try:
        for line in open(os.path.join(logs, name)):
            c, m, v = line.split()
            d.setdefault((c, m), []).append(float(v))
    except (OSError, ValueError) as e:
        print("%s: %s" % (name, e))
for c in ("seed", "resnet"):
    med = {m: statistics.median(t[(c, m)]) for m in ("none", "fingerprint", "full")
           if (c, m) in t}
    if "none" not in med:
        print("%s: no timing" % c)
        continue
    line = "%s wall (median): none %.3f s" % (c, med["none"])
    for m in ("fingerprint", "full"):
        if m in med:
            line += ", %s %.3f s (%.3fx none)" % (m, med[m], med[m] / med["none"])
    if "fingerprint" in med and "full" in med:
        line += ", fingerprint/full %.3fx" % (med["fingerprint"] / med["full"])
    print(line)
    if (c, "fingerprint") in b and (c, "full") in b:
        print("%s bundle bytes: fingerprint %d, full %d (%.4fx)" % (
            c, b[(c, "fingerprint")][0], b[(c, "full")][0],
            b[(c, "fingerprint")][0] / b[(c, "full")][0]))
PY
rm -rf "$work"
tar czf "$out/logs.tgz" -C /tmp/logs gpu_fp 2>/dev/null
echo "---- steps"
cat "$logs/steps.txt"
echo "---- summary"
cat "$summary"
