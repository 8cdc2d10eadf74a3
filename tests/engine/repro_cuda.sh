#!/bin/sh
# cuda --repro bitwise against cpu, bit for bit (tests/engine/check_repro.c): every op case,
# with the grid limited and with naive products, and a small network at several batch sizes;
# exits 77, skipped, on a machine without a GPU or a build without CUDA.
./gpudiff-agent --version | grep -q cuda || { echo "SKIP: no cuda backend in this build"; exit 77; }
# CUDA does not survive fork(): Check runs the tests in this process.
CK_FORK=no exec ./tests/engine/check_repro
