#!/bin/sh
# The seed case on both CPU backends: bundles written, numpy reads them, cpu64 agrees with an
# independent float64 computation to 1e-12, cpu with cpu64 to 1e-5 up to fc2.
. ./tests/integration/env.sh
need_seed
need_numpy
"$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$SEED_DIR/input.npz" --input-key inp \
    --backend cpu64 --out "$TMP/cpu64"
"$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$SEED_DIR/input.npz" --input-key inp \
    --backend cpu --out "$TMP/cpu"
"$PYTHON_NUMPY" "$GD_SRCDIR/tests/integration/lenet_reference.py" "$SEED_DIR" "$TMP/cpu64" "$TMP/cpu"
