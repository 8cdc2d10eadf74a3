#!/bin/sh
# tests/bench/gpu_ops-idx.sh: the GPU checks of the indexing, data movement, batched MatMul
# and loss ops (ops-idx), for a machine with an NVIDIA GPU where this checkout was built
# with CUDA (or its build folder copied):
#   - every op's rep case on cuda against cpu64 (tests/engine/backend_ops_cuda.sh);
#   - every fixture case of these ops on cuda against the exact values, bitwise where the
#     CPU is (check_op_index, check_op_shape, check_op_gemm, check_op_loss with
#     GD_TEST_OP_BACKENDS=cuda), including the run-time index and target checks (GD_ERANGE);
#   - MatMul of 4-D batches with TF32 on and off (check_cuda_tf32).
# Logs go to OUT (default: ./gpu-logs); a summary is printed last. A few minutes in all.
# usage: tests/bench/gpu_ops-idx.sh BUILD_DIR SHARED_DIR (the shared folder is checked for
# presence only, as gpu_session.sh takes it)
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
cd "$build"
export GD_TEST_FIXTURES="$top/tests/fixtures"
status=0
: >"$out/summary-ops-idx.txt"
step() {
    name=$1; shift
    start=$(date +%s)
    "$@" >"$out/$name.log" 2>&1
    rc=$?
    # the Check totals line, or the last line of the log
    last=$(grep -E '^[0-9]+%: Checks' "$out/$name.log" | tail -n 1)
    [ -n "$last" ] || last=$(tail -n 1 "$out/$name.log")
    echo "$name: exit $rc ($(( $(date +%s) - start )) s) $last" >>"$out/summary-ops-idx.txt"
    [ "$rc" = 0 ] || status=1
}
cuda_cases() {
    # CUDA does not survive fork(): Check runs the tests in this process.
    CK_FORK=no GD_TEST_OP_BACKENDS=cuda "$@"
}
./gpudiff-agent --version | grep -q cuda || { echo "no cuda backend in $build"; exit 1; }
step backend_ops_cuda sh "$top/tests/engine/backend_ops_cuda.sh"
step op_index_cuda cuda_cases ./tests/engine/check_op_index
step op_shape_cuda cuda_cases ./tests/engine/check_op_shape
step op_gemm_cuda cuda_cases ./tests/engine/check_op_gemm
step op_loss_cuda cuda_cases ./tests/engine/check_op_loss
step cuda_tf32 ./tests/engine/check_cuda_tf32
for log in "$out"/op_*_cuda.log "$out"/backend_ops_cuda.log; do
    grep -E 'outside|FAIL|not supported|got ' "$log" | head -n 5
done
cat "$out/cuda_tf32.log"
echo "---- ops-idx on $(head -n 2 "$out/gpu.txt" | tail -n 1)"
cat "$out/summary-ops-idx.txt"
[ "$status" = 0 ] && echo "ops-idx GPU checks: all passed" || echo "ops-idx GPU checks: FAILED"
exit $status
