#!/bin/sh
# tests/bench/gpu_sweep.sh: issue 11 on a GPU, in one go, for a machine with an NVIDIA GPU
# where this checkout was built with CUDA (or its build folder copied):
#   1. check_cuda_session: the session's timing, offers and pins on cuda;
#   2. `gpudiff-agent sweep --backend cuda` with the default grid on the seed case and on a
#      ResNet-50 (torchvision layout, random weights, 32 images, exported from PyTorch);
#   3. the same table from PyTorch on the same GPU (cudnn.benchmark, cudnn.deterministic,
#      allow_tf32; batch sizes 1, 8, 32), then both side by side with the lines the issue's
#      "must show" asks for. Logs, JSON documents and reports go to OUT (default ./gpu-logs).
# usage: tests/bench/gpu_sweep.sh BUILD_DIR SHARED_DIR [PYTHON_WITH_TORCH]
# Estimated at 4 to 6 minutes on an H200 (not measured yet); REPEATS sets the timed runs per
# setting (default 20), each step has a time limit (the ResNet-50 sweep's: SWEEP_RESNET_LIMIT, 300 s).
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
py=${3:-python3}
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
seed="$shared/cases/lenet-11-821"
work="${TMPDIR:-/tmp}/gpudiff-sweep-bench"
REPEATS=${REPEATS:-20}
mkdir -p "$work"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
status=0
# step NAME LIMIT_S COMMAND...: a step may not run past its limit (exit 124 if it does)
step() {
    name=$1 limit=$2; shift 2
    start=$(date +%s)
    timeout "$limit" "$@" >"$out/$name.log" 2>"$out/$name.err"
    rc=$?
    echo "$name: exit $rc ($(( $(date +%s) - start )) s)" | tee -a "$out/summary.txt"
    [ "$rc" = 0 ] || status=1
}
# a check program: built here when the build folder has not made it (make check does)
[ -x "$build/tests/engine/check_cuda_session" ] ||
    make -C "$build" tests/engine/check_cuda_session >"$out/make.log" 2>&1
step check_cuda_session 120 "$build/tests/engine/check_cuda_session"
step export 120 "$py" "$top/tests/bench/sweep_torch.py" export "$seed" "$work"
# the engine's sweep with the default grid: its document is the step's stdout (.log), kept as
# .json, and its report made from it (.txt)
agent_sweep() {
    name=$1 limit=$2 model=$3 input=$4
    shift 4
    step "$name" "$limit" "$build/gpudiff-agent" sweep --backend cuda --model "$model" \
        --input "$input" --repeats "$REPEATS" --json "$@"
    cp "$out/$name.log" "$out/$name.json"
    "$build/gpudiff-agent" sweep --report "$out/$name.json" >"$out/$name.txt" 2>&1
}
agent_sweep sweep_seed 150 "$work/lenet-11-821.json" "$seed/input.npz" --input-key inp
# 2 captures (one repeat in a fresh session) beside the 20 timed outputs: each capture of it
# is about 4 GB, and the script must stay within minutes
agent_sweep sweep_resnet50 "${SWEEP_RESNET_LIMIT:-300}" "$work/resnet50/model.json" "$work/resnet50/input.npy" \
    --captures 2
step torch_seed 120 "$py" "$top/tests/bench/sweep_torch.py" table "$seed" "$work" seed "$REPEATS" \
    1,250,1000 "$out/torch_seed.json"
step torch_resnet50 150 "$py" "$top/tests/bench/sweep_torch.py" table "$seed" "$work" resnet50 \
    "$REPEATS" 1,8,32 "$out/torch_resnet50.json"
for m in seed resnet50; do
    [ -s "$out/sweep_$m.json" ] && [ -s "$out/torch_$m.json" ] &&
        "$py" "$top/tests/bench/sweep_torch.py" side "$out/sweep_$m.json" "$out/torch_$m.json" \
            >"$out/side_$m.txt" 2>&1
done
echo
for m in seed resnet50; do
    [ -s "$out/sweep_$m.txt" ] && sed -n '1,/^What does it cost/p' "$out/sweep_$m.txt" | head -40
done
cat "$out/side_seed.txt" "$out/side_resnet50.txt" 2>/dev/null
echo
cat "$out/summary.txt"
exit $status
