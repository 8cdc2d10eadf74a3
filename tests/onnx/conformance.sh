#!/bin/sh
# The ONNX backend tests (Debian's libonnx-testdata and ../shared/onnx-tests) on cpu and
# cpu64: fails when a test of tests/onnx/pass_list.txt no longer passes or when a float test
# whose ops the engine all has fails numerically; prints the passes the list lacks
# (`make onnx-pass-list` rewrites it). docs/ONNX.md, "Conformance".
. ./tests/integration/env.sh
data=/usr/share/libonnx-testdata/data
[ -d "$data/node" ] || skip "no ONNX test data in $data (Debian: apt-get install libonnx-testdata)"
set -- node="$data/node" pytorch-converted="$data/pytorch-converted" \
    pytorch-operator="$data/pytorch-operator" simple="$data/simple"
if [ -d "$GD_SHARED_DIR/onnx-tests" ]; then
    set -- "$@" shared-pytorch-converted="$GD_SHARED_DIR/onnx-tests/pytorch-converted" \
        shared-pytorch-operator="$GD_SHARED_DIR/onnx-tests/pytorch-operator"
fi
set +e
"$GD_BUILDDIR/tests/onnx/onnx_conformance" --quiet --check "$GD_SRCDIR/tests/onnx/pass_list.txt" \
    --known "$GD_SRCDIR/tests/onnx/known_failures.txt" \
    "$@" >"$TMP/conformance.txt" 2>&1
rc=$?
set -e
grep -v '^new pass' "$TMP/conformance.txt"
news=$(grep -c '^new pass' "$TMP/conformance.txt" || true)
[ "$news" = 0 ] || { grep '^new pass' "$TMP/conformance.txt" | head -n 20;
    echo "($news new passes: \`make onnx-pass-list\` adds them)"; }
[ "$rc" = 0 ] || fail "ONNX conformance (exit $rc)"
