#!/bin/sh
# tests/bench/gpu_onnx.sh: the ONNX checks that need the GPU machine, in one go (a few
# minutes): torchvision resnet18, mobilenet_v3_small, efficientnet_b0, vit_b_16 and a 4-layer
# nn.TransformerEncoder exported with torch.onnx.export, run through gpudiff-agent on cpu64,
# cpu and cuda (TF32 off and on) and through onnxruntime's CPU provider, compared; the TF32
# diff's first divergent layer; vit_b_16's load time against onnxruntime's session creation.
# Logs, models and bundles go to OUT (default ./gpu-logs/onnx); the summary comes last.
# usage: tests/bench/gpu_onnx.sh BUILD_DIR SHARED_DIR [PYTHON_WITH_TORCH]
#   (PYTHON default /opt/torch/.venv/bin/python3; BUILD_DIR built with CUDA and `make bench`)
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
py=${3:-/opt/torch/.venv/bin/python3}
out=${OUT:-$PWD/gpu-logs}/onnx
mkdir -p "$out"
top=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$build/tests/bench/bench_onnx_load" ] || make -C "$build" tests/bench/bench_onnx_load \
    >"$out/make_bench.log" 2>&1 || echo "gpu_onnx: no bench_onnx_load (see $out/make_bench.log)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader >"$out/gpu.txt" 2>&1
"$build/gpudiff-agent" --version >"$out/version.txt" 2>&1
echo "shared: $shared" >>"$out/version.txt"
start=$(date +%s)
"$py" "$top/tests/bench/gpu_onnx.py" --build "$build" --out "$out" >"$out/summary.txt" \
    2>"$out/gpu_onnx.log"
rc=$?
cat "$out/gpu.txt" "$out/version.txt"
cat "$out/summary.txt"
echo "gpu_onnx: exit $rc ($(( $(date +%s) - start )) s); details in $out/gpu_onnx.log and $out/gpu_onnx.json"
exit $rc
