#!/bin/sh
# Every command of gpudiff-agent takes an ONNX model as run does (issue 23 item 1: one model
# loader, agent/model_load.c). The seed case written as ONNX (seed_to_onnx.py) and its input
# as an ONNX TensorProto (.pb): run on cpu and cpu64; replay of the cpu64 run on cpu, its
# layers named as the model's and the diff's cause found through it; sweep on the .pb input;
# fetch-layers of a fingerprint run, which computes the model only up to the layer asked
# for. (Jobs of an ONNX model, submit and serve, are tests/integration/agent_jobs.sh.)
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
need_numpy
"$PYTHON_NUMPY" -c 'import onnx' 2>/dev/null || skip "$PYTHON_NUMPY has no onnx module (python3-onnx)"

"$PYTHON_NUMPY" "$GD_SRCDIR/tests/onnx/seed_to_onnx.py" "$SEED_MODEL" "$SEED_DIR/initializer" \
    "$TMP/lenet.onnx"
"$PYTHON_NUMPY" - "$SEED_DIR/input.npz" "$TMP/input.pb" <<'PY'
import sys
import numpy as np
from onnx import numpy_helper
x = np.load(sys.argv[1])["inp"][:64]
open(sys.argv[2], "wb").write(numpy_helper.from_array(x, "inp").SerializeToString())
PY
M="$TMP/lenet.onnx"

# ---- run and replay ----
"$AGENT" run --model "$M" --input "$TMP/input.pb" --emulate tf32 --out "$TMP/a" >/dev/null
"$AGENT" run --model "$M" --input "$TMP/input.pb" --backend cpu64 --out "$TMP/t" >/dev/null
"$AGENT" replay "$TMP/t" --model "$M" --emulate tf32 --out "$TMP/r" --json >"$TMP/r.json" ||
    fail "replay of an ONNX model's run exited $?"
jq -e --slurpfile t "$TMP/t/run.json" '.replay.of == $t[0].id and
    ([.layers[].name] == [$t[0].layers[].name]) and (.layers | length) == 12' \
    "$TMP/r/run.json" >/dev/null || fail "the replay's layers: $(jq -c '[.layers[].name]' "$TMP/r/run.json")"
"$AGENT" diff "$TMP/a" "$TMP/t" --replay "$TMP/r" --json >"$TMP/diff.json"
jq -e '.cause == "fc1"' "$TMP/diff.json" >/dev/null ||
    fail "the replay names no cause fc1: $(jq -c '.cause' "$TMP/diff.json")"
# the run's own input file is checked: another one is refused
"$PYTHON_NUMPY" -c "import numpy; numpy.save('$TMP/other.npy', numpy.zeros((64, 1, 28, 28), 'float32'))"
expect_exit 3 "$AGENT" replay "$TMP/t" --model "$M" --input "$TMP/other.npy" --out "$TMP/x"
grep -q "it must be the run's own input" "$TMP/err.txt" || fail "another input was not refused"
# a model whose Reshape target is computed from the input's shape at each inference (a fold)
"$PYTHON_NUMPY" -c "import numpy; numpy.save('$TMP/x3.npy', numpy.linspace(-1, 1, 36, dtype=numpy.float32).reshape(3, 3, 4))"
"$AGENT" run --model "$GD_SRCDIR/tests/fixtures/onnx/fold.onnx" --input "$TMP/x3.npy" \
    --backend cpu64 --out "$TMP/f64" >/dev/null
"$AGENT" replay "$TMP/f64" --model "$GD_SRCDIR/tests/fixtures/onnx/fold.onnx" --out "$TMP/fr" \
    >/dev/null || fail "replay of a model with a shape computation exited $?"
jq -e '[.layers[] | [.name, .shape]] == [["flatten", [3, 12]], ["act", [3, 12]]]' \
    "$TMP/fr/run.json" >/dev/null || fail "the fold's replay: $(jq -c .layers "$TMP/fr/run.json")"
echo "ok: run, replay and diff --replay of an ONNX model (cause fc1), and of one with a fold"

# ---- sweep ----
"$AGENT" sweep --model "$M" --input "$TMP/input.pb" --grid 'emulate=none,bf16' --repeats 2 \
    --warmup 0 --captures 2 --quiet --json >"$TMP/sweep.json" || fail "sweep of an ONNX model exited $?"
jq -e '(.settings | length) == 2 and all(.settings[]; .status == "ok" and .vs_float64.compared)
    and .inputs[0].name == "input" and .input.shape == [64, 1, 28, 28]' "$TMP/sweep.json" \
    >/dev/null || fail "the sweep document: $(head -c 600 "$TMP/sweep.json")"
echo "ok: sweep of an ONNX model with a .pb input"

# ---- fetch-layers: the re-run stops after the layer asked for ----
GPUDIFF_TOKEN=$(token agent)
export GPUDIFF_TOKEN
server_start
"$AGENT" run --model "$M" --input "$TMP/input.pb" --capture fingerprint --out "$TMP/f" \
    --server "$URL" >/dev/null 2>"$TMP/f.err" || fail "run --server: $(cat "$TMP/f.err")"
F=$(jq -r .id "$TMP/f/run.json")
A="Authorization: Bearer $GPUDIFF_TOKEN"
expect 201 POST "/api/v1/runs/$F/requests" -H "$A" -H 'Content-Type: application/json' \
    -d '{"index": 3}'
"$AGENT" fetch-layers --server "$URL" "$F" --keep "$TMP/keep" >"$TMP/fetch.txt" 2>"$TMP/fetch.err" ||
    fail "fetch-layers exited $?: $(cat "$TMP/fetch.err")"
grep -q "^layer 3 conv2: sent$" "$TMP/fetch.txt" || fail "fetch-layers: $(cat "$TMP/fetch.txt" "$TMP/fetch.err")"
[ "$(jq '.layers | length' "$TMP/keep/run.json")" = 4 ] ||
    fail "the re-run computed $(jq '.layers | length' "$TMP/keep/run.json") layers for layer 3"
expect 200 GET "/api/v1/runs/$F/requests" -H "$A"
[ "$(jq '.pending | length' "$TMP/body")" = 0 ] || fail "a request is left: $(cat "$TMP/body")"
echo "ok: fetch-layers of an ONNX run: layer 3 sent, computed up to it only"
