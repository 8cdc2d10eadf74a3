#!/bin/sh
# Every op of ops.def on the cuda backend against cpu64 (check_backend_ops with the cuda
# backend selected); exits 77, skipped, on a machine without a GPU or a build without CUDA.
./gpudiff-agent --version | grep -q cuda || { echo "SKIP: no cuda backend in this build"; exit 77; }
# CUDA does not survive fork(): Check runs the tests in this process.
CK_FORK=no GD_TEST_BACKENDS=cpu64,cuda exec ./tests/engine/check_backend_ops
