#!/bin/sh
# The seed case on cpu and cpu64 gives the same bits whatever the thread count, the vector
# level or the batch slicing: every layer file is compared byte for byte with a run of the
# plain loops on one thread (GPUDIFF_CPU_SIMD=off --threads 1).
. ./tests/integration/env.sh
need_seed
run() {
    out=$1; shift
    "$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$SEED_DIR/input.npz" --input-key inp --out "$TMP/$out" "$@" >/dev/null
}
for backend in cpu cpu64; do
    GPUDIFF_CPU_SIMD=off run "$backend-plain" --backend "$backend" --threads 1
    run "$backend-t1" --backend "$backend" --threads 1
    run "$backend-t2" --backend "$backend" --threads 2
    run "$backend-t5" --backend "$backend" --threads 5
    run "$backend-b7t3" --backend "$backend" --threads 3 --batch 7
    GPUDIFF_CPU_SIMD=portable run "$backend-portable" --backend "$backend" --threads 3
    for variant in t1 t2 t5 b7t3 portable; do
        n=0
        for f in "$TMP/$backend-plain"/layers/*.npy; do
            cmp -s "$f" "$TMP/$backend-$variant/layers/$(basename "$f")" ||
                fail "$backend $variant: $(basename "$f") differs from the plain loops' run"
            n=$((n + 1))
        done
        [ "$n" -gt 0 ] || fail "$backend: no layers written"
        echo "$backend $variant: $n layers identical to the plain loops on one thread"
    done
done
