#!/bin/sh
# calibration.sh: a slice of the verdict's calibration corpus (tests/engine/calibration.py):
# generated graphs run on cpu and cpu64 must diff as identical or noise at every layer, and a
# GEMM or convolution emulated in TF32, BF16 or FP16 must be named where the difference
# starts, with its precision. The full corpus (1,000 graphs) is tests/bench/calibration.sh;
# its tables are in docs/COMPARISON.md. CALIBRATION_CASES overrides the slice's size.
. ./tests/integration/env.sh
need_numpy
"$PYTHON_NUMPY" -c "import onnx" 2>/dev/null || skip "no python onnx module (Debian's python3-onnx)"
"$PYTHON_NUMPY" "$GD_SRCDIR/tests/engine/calibration.py" "$AGENT" "$TMP/calib" \
    --cases "${CALIBRATION_CASES:-36}" --inject "${CALIBRATION_CASES:-36}" --seed 7
