#!/bin/sh
# tests/bench/gpu_ops-spatial.sh: the GPU checks of ops-spatial's ops (1-D/3-D Conv,
# ConvTranspose and pools, GlobalMaxPool, MaxPool's Indices, the normalizations, Resize and
# Upsample), for a machine with an NVIDIA GPU where this checkout was built with CUDA (or its
# build folder copied). Logs go to OUT (default ./gpu-logs); a summary is printed last.
#   1. every fixture case of those ops on cuda against cpu64 within the trait bound
#      (check_backend_ops with GD_TEST_ALL_CASES=1), not only the `rep` case;
#   2. check_cuda_spatial: pools and Resize bit for bit against cpu, the tree-reduced
#      normalizations the same bits on two runs, every Conv/ConvTranspose case (3-D included)
#      within the bound with each conv_algo choice (heuristic, deterministic, autotune), the
#      algorithm cuDNN ran printed per case;
#   3. a LayerNormalization row of 768 and a 3-D convolution through gpudiff-agent, timed.
# usage: tests/bench/gpu_ops-spatial.sh BUILD_DIR SHARED_DIR [PYTHON_WITH_NUMPY]
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
py=${3:-python3}
out=${OUT:-$PWD/gpu-logs}
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$build"
export GD_TEST_FIXTURES="$top/tests/fixtures"
OPS=Conv,ConvTranspose,MaxPool,AveragePool,GlobalAveragePool,GlobalMaxPool,BatchNormalization
OPS=$OPS,LRN,InstanceNormalization,LayerNormalization,MeanVarianceNormalization
OPS=$OPS,GroupNormalization,Resize,Upsample
status=0
: >"$out/summary.txt"
step() {
    name=$1; shift
    start=$(date +%s)
    "$@" >"$out/$name.log" 2>&1
    rc=$?
    echo "$name: exit $rc ($(( $(date +%s) - start )) s)" | tee -a "$out/summary.txt"
    [ "$rc" = 0 ] || status=1
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
# 1. CUDA does not survive fork(): Check runs the tests in this process.
step spatial_cases_cuda env CK_FORK=no GD_TEST_BACKENDS=cpu64,cuda GD_TEST_ALL_CASES=1 \
    GD_TEST_OPS="$OPS" ./tests/engine/check_backend_ops
# 2.
step cuda_spatial ./tests/engine/check_cuda_spatial
# 3. two models through the agent on cuda and cpu64, diffed (timing in run.json)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpudiff-spatial.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$py" - "$tmp" <<'PY' >"$out/models.log" 2>&1
import json, sys
import numpy as np
t = sys.argv[1]
rng = np.random.default_rng(3)
def w(name, shape, scale=1.0):
    a = rng.uniform(-scale, scale, shape).astype(np.float32)
    return {"name": name, "dtype": "float32", "shape": list(shape), "values": a.ravel().tolist()}
ln = {"format": "gpudiff-model", "version": 1, "name": "layernorm",
      "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 128, 768]}],
      "weights": [w("g", (768,)), w("b", (768,))],
      "nodes": [{"name": "ln", "op": "LayerNormalization", "inputs": ["x", "g", "b"],
                 "outputs": ["y", "mean", "inv"], "attrs": {"axis": -1}}],
      "outputs": ["y", "mean", "inv"]}
conv = {"format": "gpudiff-model", "version": 1, "name": "conv3d",
        "inputs": [{"name": "x", "dtype": "float32", "shape": [-1, 8, 16, 32, 32]}],
        "weights": [w("k", (16, 8, 3, 3, 3), 0.2), w("kb", (16,))],
        "nodes": [{"name": "c", "op": "Conv", "inputs": ["x", "k", "kb"], "outputs": ["y"],
                   "attrs": {"pads": [1, 1, 1, 1, 1, 1]}},
                  {"name": "p", "op": "MaxPool", "inputs": ["y"], "outputs": ["z", "zi"],
                   "attrs": {"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]}},
                  {"name": "r", "op": "Resize", "inputs": ["z", "", "s"], "outputs": ["u"],
                   "attrs": {"mode": "linear"}}],
        "outputs": ["u", "zi"]}
conv["weights"].append({"name": "s", "dtype": "float32", "shape": [5],
                        "values": [1, 1, 2, 2, 2]})
for name, m in (("layernorm", ln), ("conv3d", conv)):
    json.dump(m, open("%s/%s.json" % (t, name), "w"))
np.save(t + "/x_ln.npy", rng.uniform(-2, 2, (8, 128, 768)).astype(np.float32))
np.save(t + "/x_conv3d.npy", rng.uniform(-1, 1, (2, 8, 16, 32, 32)).astype(np.float32))
print("models written")
PY
for m in layernorm conv3d; do
    x=$tmp/x_$m.npy
    [ "$m" = layernorm ] && x=$tmp/x_ln.npy
    step "agent_${m}_cuda" ./gpudiff-agent run --model "$tmp/$m.json" --input "$x" \
        --out "$tmp/$m-cuda" --backend cuda
    step "agent_${m}_cpu64" ./gpudiff-agent run --model "$tmp/$m.json" --input "$x" \
        --out "$tmp/$m-cpu64" --backend cpu64
    step "diff_$m" ./gpudiff-agent diff "$tmp/$m-cuda" "$tmp/$m-cpu64"
done
echo "--- summary (every line should say exit 0) ---"
cat "$out/summary.txt"
echo "--- check_cuda_spatial ---"
grep -E "FAIL|PASS|SKIP" "$out/cuda_spatial.log" | tail -n 5
grep -E "conv3d.*(heuristic|deterministic|autotune)" "$out/cuda_spatial.log" | head -n 12
echo "--- diffs (expected: no divergent layer; cuda within its bound of cpu64) ---"
for m in layernorm conv3d; do tail -n 8 "$out/diff_$m.log"; done
tail -n 3 "$out/spatial_cases_cuda.log"
exit $status
