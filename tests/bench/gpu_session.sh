#!/bin/sh
# tests/bench/gpu_session.sh: everything that needs the GPU, in one go, for a machine with
# an NVIDIA GPU where this checkout was built (or its build folder copied):
#   the cuda op tests against cpu64, the TF32 range test, the seed case on the GPU, and the
#   benchmark against PyTorch. Logs go to OUT (default: ./gpu-logs).
# usage: tests/bench/gpu_session.sh BUILD_DIR SHARED_DIR [PYTHON_WITH_TORCH]
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
py=${3:-python3}
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
# The build's test preamble names the folders it was configured with: point it here.
sed -e "s#^GD_SRCDIR=.*#GD_SRCDIR='$top'#" -e "s#^GD_BUILDDIR=.*#GD_BUILDDIR='$build'#" \
    -e "s#^GD_SHARED_DIR=.*#GD_SHARED_DIR='$shared'#" -e "s#^PYTHON_NUMPY=.*#PYTHON_NUMPY='$py'#" \
    "$top/tests/integration/env.sh.in" >"$build/tests/integration/env.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
cd "$build"
export GD_TEST_FIXTURES="$top/tests/fixtures"
status=0
step() {
    name=$1; shift
    start=$(date +%s)
    "$@" >"$out/$name.log" 2>&1
    rc=$?
    echo "$name: exit $rc ($(( $(date +%s) - start )) s)" | tee -a "$out/summary.txt"
    [ "$rc" = 0 ] || [ "$rc" = 77 ] || status=1
}
step backend_ops_cuda sh "$top/tests/engine/backend_ops_cuda.sh"
step cuda_tf32 ./tests/engine/check_cuda_tf32
step seed_cuda sh "$top/tests/integration/seed_cuda.sh"
step bench_cuda "$py" "$top/tests/bench/bench_cuda.py" "$build" "$shared/cases/lenet-11-821" \
    "${TMPDIR:-/tmp}/gpudiff-bench" 20
tail -n 5 "$out"/*.log
exit $status
