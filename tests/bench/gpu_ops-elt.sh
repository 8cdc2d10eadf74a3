#!/bin/sh
# tests/bench/gpu_ops-elt.sh: the GPU checks of the element-wise, logical, cast and reduction
# ops (issue 10 item 3), for a machine with an NVIDIA GPU where this checkout was built with
# CUDA (or its build folder copied). tests/engine/backend_ops_cuda.sh runs one case ("rep")
# of every op on cuda; this runs tests/engine/backend_cases_elt.sh there, which runs every
# fixture case of these ops (the list is in that script): the integer and bool cases, Sum and
# Mean over 10 inputs, reductions longer than the 256-thread tree, every Cast pair, the edge
# values, on cuda against cpu64 within each op's trait bound of ops.def, integer, bool and
# exact outputs bit for bit. Takes seconds. Logs go to OUT (default: ./gpu-logs).
# usage: tests/bench/gpu_ops-elt.sh BUILD_DIR SHARED_DIR
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$build"
export GD_TEST_FIXTURES="$top/tests/fixtures"
: "$shared" # taken for the common calling convention of the GPU scripts; unused
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/elt-gpu.txt" 2>&1
if ! ./gpudiff-agent --version | grep -q cuda; then
    echo "elt: FAIL: $build has no cuda backend (configure --with-cuda-archs=90)"
    exit 1
fi
: >"$out/elt-summary.txt"
status=0
step() {
    name=$1; shift
    start=$(date +%s)
    "$@" >"$out/$name.log" 2>&1
    rc=$?
    checks=$(grep -E '^[0-9]+%: Checks' "$out/$name.log" | tail -n 1)
    echo "$name: exit $rc ($(( $(date +%s) - start )) s) ${checks:-no Check summary}" \
        | tee -a "$out/elt-summary.txt"
    [ "$rc" = 0 ] || status=1 # 77 (skipped: no GPU found) fails here too
}
# CUDA does not survive fork(): Check runs the tests in this process.
step elt_all_cases_cuda env CK_FORK=no GD_TEST_BACKENDS=cpu64,cuda \
    sh "$top/tests/engine/backend_cases_elt.sh"
step elt_all_cases_cpu sh "$top/tests/engine/backend_cases_elt.sh"
if [ "$status" != 0 ]; then
    echo "first failures:"
    grep -h -E 'on cuda|case |not supported' "$out"/elt_all_cases_cuda.log | head -n 20
fi
refused=$(grep -c 'not supported' "$out/elt_all_cases_cuda.log")
echo "cases refused as not supported on cuda: $refused (0 expected)"
[ "$refused" = 0 ] || status=1
exit $status
