#!/bin/sh
# Every op of ops.def on the cuda backend against cpu64 (check_backend_ops with the cuda
# backend selected), then the float16 and bfloat16 cases of tests/fixtures/ops/half on cuda
# (check_half_call); exits 77, skipped, on a machine without a GPU or a build without CUDA.
./gpudiff-agent --version | grep -q cuda || { echo "SKIP: no cuda backend in this build"; exit 77; }
# CUDA does not survive fork(): Check runs the tests in this process.
CK_FORK=no GD_TEST_BACKENDS=cpu64,cuda ./tests/engine/check_backend_ops
rc=$?
[ "$rc" = 77 ] && exit 77
CK_FORK=no GD_TEST_OP_BACKENDS=cuda ./tests/engine/check_half_call || rc=1
exit $rc
