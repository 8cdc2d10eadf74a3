#!/bin/sh
# tests/bench/gpu_cudnn.sh: the GPU checks and benchmarks of issue 17 (the CUDA backend at
# framework speed), in one go, for the H200 machine (or any NVIDIA GPU) where this checkout
# was built with CUDA and `make check TESTS= && make bench`:
#   correctness first, several checks at once (none of them is timed):
#     backend_ops_{graph,legacy}   every op of ops.def on cuda against cpu64, each conv API
#     conv_cases_{graph,legacy}    every Conv/ConvTranspose fixture case (1-D, 2-D, 3-D,
#                                  groups, unequal pads, output_shape)
#     cuda_tf32_{graph,legacy}     TF32 errors in a 10-bit mantissa's range, FP32's when off
#     cuda_session                 offers, pins (ids and engine configs), tensor-core engines
#                                  refused with TF32 off
#     cuda_spatial_{graph,legacy}  every conv case with heuristic, deterministic, autotune
#     seed_cuda_{graph,legacy}     the seed case's GPU checks (deterministic twice bitwise)
#   then, once the models are exported (in the background meanwhile):
#     det_twice                    mobilenet_v3_small and ResNet-50 (batch 8), deterministic,
#                                  graph API, twice through gpudiff-agent: every layer
#                                  bitwise identical
#   then, alone: tests/bench/gpu_cudnn.py bench (engine / PyTorch for ResNet-50, vit_b_16,
#     mobilenet_v3_small at batch 1, 8, 32, TF32 off/on, heuristic/autotune/deterministic;
#     legacy beside graph; outputs; per-op device time; capture against its bound).
# Each step has its own timeout, logs to LOGS (default /tmp/gpu_cudnn-logs) and goes on
# after a failure; the summary comes last, and LOGS is packed into OUT/logs.tgz.
# usage: tests/bench/gpu_cudnn.sh BUILD_DIR SHARED_DIR [PYTHON_WITH_TORCH]
# env: GPU_CUDNN_MODELS (resnet50,vit_b_16,mobilenet_v3_small), GPU_CUDNN_BATCHES (1,8,32),
#      GPU_CUDNN_REPEATS (20), GPU_CUDNN_SKIP (step names to leave out, comma separated;
#      "bench" leaves out the benchmark), GPU_CUDNN_WORK (models; default /tmp/gpu_cudnn-work),
#      GPU_CUDNN_BENCH_TIMEOUT (600 s), GPU_CUDNN_STEP_TIMEOUT (the most any step may take),
#      GPU_CUDNN_NO_OPS=1 (leave out the per-op comparison)
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
py=${3:-/opt/torch/.venv/bin/python3}
out=${OUT:-$PWD/gpu-logs}
logs=${LOGS:-/tmp/gpu_cudnn-logs}
work=${GPU_CUDNN_WORK:-/tmp/gpu_cudnn-work}
models=${GPU_CUDNN_MODELS:-resnet50,vit_b_16,mobilenet_v3_small}
batches=${GPU_CUDNN_BATCHES:-1,8,32}
repeats=${GPU_CUDNN_REPEATS:-20}
skip=,${GPU_CUDNN_SKIP:-},
cap=${GPU_CUDNN_STEP_TIMEOUT:-600}
mkdir -p "$out" "$logs" "$work"
top=$(cd "$(dirname "$0")/../.." && pwd)
t_start=$(date +%s)
# The build's test preamble names the folders it was configured with: point it here.
sed -e "s#^GD_SRCDIR=.*#GD_SRCDIR='$top'#" -e "s#^GD_BUILDDIR=.*#GD_BUILDDIR='$build'#" \
    -e "s#^GD_SHARED_DIR=.*#GD_SHARED_DIR='$shared'#" -e "s#^PYTHON_NUMPY=.*#PYTHON_NUMPY='$py'#" \
    "$top/tests/integration/env.sh.in" >"$build/tests/integration/env.sh"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$logs/gpu.txt" 2>&1
cd "$build"
export GD_TEST_FIXTURES="$top/tests/fixtures"
: >"$logs/summary.txt"

# step NAME TIMEOUT CMD...: runs CMD with a timeout, logs it, records its exit status.
step() {
    name=$1; limit=$2; shift 2
    [ "$limit" -gt "$cap" ] && limit=$cap
    case $skip in *,$name,*) echo "$name: skipped" >>"$logs/summary.txt"; return 0 ;; esac
    s=$(date +%s)
    timeout "$limit" "$@" >"$logs/$name.log" 2>&1
    rc=$?
    verdict=ok
    [ "$rc" = 0 ] || verdict=FAILED
    [ "$rc" = 77 ] && verdict=skipped
    [ "$rc" = 124 ] && verdict="TIMED OUT after $limit s"
    echo "$name: exit $rc, $verdict ($(( $(date +%s) - s )) s)" >>"$logs/summary.txt"
}

# ---- models, in the background: CPU work while the checks use the GPU ----
(
    case $skip in *,bench,*) exit 0 ;; esac
    step prepare 400 "$py" "$top/tests/bench/gpu_cudnn.py" prepare --work "$work" \
        --models "$models" --batches "$batches"
) &
prep=$!

# ---- correctness, several at once ----
pids=
bg() { "$@" & pids="$pids $!"; }
bg step backend_ops_graph 300 env GD_TEST_CONV_API=graph sh "$top/tests/engine/backend_ops_cuda.sh"
bg step backend_ops_legacy 300 env GD_TEST_CONV_API=legacy sh "$top/tests/engine/backend_ops_cuda.sh"
bg step conv_cases_graph 300 env CK_FORK=no GD_TEST_BACKENDS=cpu64,cuda GD_TEST_ALL_CASES=1 \
    GD_TEST_OPS=Conv,ConvTranspose GD_TEST_CONV_API=graph ./tests/engine/check_backend_ops
bg step conv_cases_legacy 300 env CK_FORK=no GD_TEST_BACKENDS=cpu64,cuda GD_TEST_ALL_CASES=1 \
    GD_TEST_OPS=Conv,ConvTranspose GD_TEST_CONV_API=legacy ./tests/engine/check_backend_ops
bg step cuda_tf32_graph 200 env GD_TEST_CONV_API=graph ./tests/engine/check_cuda_tf32
bg step cuda_tf32_legacy 200 env GD_TEST_CONV_API=legacy ./tests/engine/check_cuda_tf32
bg step cuda_session 200 ./tests/engine/check_cuda_session
wait $pids
pids=
bg step cuda_spatial_graph 300 env GD_TEST_CONV_API=graph ./tests/engine/check_cuda_spatial
bg step cuda_spatial_legacy 300 env GD_TEST_CONV_API=legacy ./tests/engine/check_cuda_spatial
bg step seed_cuda_graph 300 env SEED_CONV_API=graph sh "$top/tests/integration/seed_cuda.sh"
bg step seed_cuda_legacy 300 env SEED_CONV_API=legacy sh "$top/tests/integration/seed_cuda.sh"
wait $pids
wait $prep

# ---- two deterministic runs of real models through the agent: every layer the same bits ----
step det_twice 300 "$py" "$top/tests/bench/gpu_cudnn.py" det --build "$build" --work "$work" \
    --batches "$batches"

# ---- the benchmark, alone on the GPU ----
step bench "${GPU_CUDNN_BENCH_TIMEOUT:-600}" "$py" "$top/tests/bench/gpu_cudnn.py" bench --build "$build" --work "$work" \
    --seed "$shared/cases/lenet-11-821" --models "$models" --batches "$batches" \
    --repeats "$repeats" ${GPU_CUDNN_NO_OPS:+--no-ops}

# ---- summary ----
for f in "$logs"/*.log; do
    n=$(basename "$f" .log)
    case $n in bench|prepare) continue ;; esac
    grep -E "^FAIL|FAIL:|[0-9]+%: Checks|^ok |^deterministic conv|^fixed:|offers, |^.*: [0-9]+ layers" "$f" \
        2>/dev/null | head -n 12 | sed "s#^#$n| #"
done >"$logs/details.txt"
tar czf "$out/logs.tgz" -C "$logs" . 2>/dev/null
cat "$logs/gpu.txt"
echo "== details (first lines of each check)"
cat "$logs/details.txt"
echo "== prepare"
tail -n 6 "$logs/prepare.log" 2>/dev/null
echo "== benchmark"
cat "$logs/bench.log" 2>/dev/null | grep -v "^  engine " | tail -n 150
echo "== steps ($(( $(date +%s) - t_start )) s in all)"
cat "$logs/summary.txt"
! grep -q "FAILED\|TIMED OUT" "$logs/summary.txt"
