#!/bin/sh
# Jobs carry what the model reads (issue 24 item 3; docs/AGENT.md, "submit" and "serve"):
# 1. The seed case's JSON model, copied where its own "weights_dir" finds nothing, submitted
#    with --weights-dir: its 10 weight files go with the job (role weights, their paths under
#    the folder), the agent places them under weights/ and runs with --weights-dir weights;
#    the run's layers are the bits of a local run with the original folder. Submitted again:
#    nothing is uploaded, nothing fetched (once per daemon, once per agent's cache).
# 2. The seed case as ONNX with its weights in external data under data/ (a location with a
#    folder), submitted with no --data: the external data goes with the job; the layers are
#    the ONNX run's made here.
# 3. A cached file whose bytes changed on the agent's disk is checked before the run: serve
#    says so, fetches it again, and the run's layers are still the right ones.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
need_numpy
"$PYTHON_NUMPY" -c 'import onnx' 2>/dev/null || skip "$PYTHON_NUMPY has no onnx module (python3-onnx)"

export GPUDIFF_TOKEN
GPUDIFF_TOKEN=$(token agent)
server_start
A="Authorization: Bearer $GPUDIFF_TOKEN"

"$AGENT" serve --server "$URL" --backend cpu --host files --cache "$TMP/cache" --poll-wait 2 \
    2>"$TMP/serve.log" &
SERVE_PID=$!
SERVER_EXIT_HOOK='kill -TERM "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID" 2>/dev/null'
n=0
until [ "$(api GET /api/v1/agents -H "$A")" = 200 ] &&
    [ "$(jq '.devices | length' "$TMP/body")" = 1 ]; do
    n=$((n + 1)); [ "$n" -le 100 ] || fail "serve did not register: $(cat "$TMP/serve.log")"
    sleep 0.1
done

# layers_of JOB: the sha256s of the layers of the job's one run
layers_of() {
    expect 200 GET "/api/v1/jobs/$1" -H "$A"
    run=$(jq -r '.tasks[0].run_id' "$TMP/body")
    expect 200 GET "/api/v1/runs/$run" -H "$A"
    jq -r '[.layers[] | .sha256] | join(" ")' "$TMP/body"
}

# ---- 1: a JSON model's weights folder ----
mkdir -p "$TMP/models"
cp "$SEED_MODEL" "$TMP/models/lenet.json" # its weights_dir (relative) leads nowhere from here
"$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" --input "$SEED_DIR/input.npz" \
    --input-key inp --out "$TMP/local" >/dev/null
jq -r '[.layers[] | .sha256] | join(" ")' "$TMP/local/run.json" >"$TMP/local.sha"
"$AGENT" submit --server "$URL" --model "$TMP/models/lenet.json" --weights-dir "$SEED_DIR/initializer" \
    --input "$SEED_DIR/input.npz" --knob input-key=inp --wait --timeout 120 >"$TMP/json.txt" \
    2>"$TMP/json.err" || fail "submit of the JSON model exited $?: $(cat "$TMP/json.err" "$TMP/serve.log")"
JOB=$(head -n 1 "$TMP/json.txt")
grep -q "the model reads 10 weight files: they go with the job" "$TMP/json.err" ||
    fail "submit did not find the weights: $(cat "$TMP/json.err")"
[ "$(grep -c 'uploading .*(weights)' "$TMP/json.err")" = 10 ] || fail "not 10 weights uploaded"
expect 200 GET "/api/v1/jobs/$JOB" -H "$A"
jq -c '[.weights[] | .file | strings] | unique' "$SEED_MODEL" >"$TMP/want.json"
jq -e --slurpfile want "$TMP/want.json" '([.files[] | select(.role == "weights") | .name] |
    sort) == $want[0] and ($want[0] | length) == 10' "$TMP/body" >/dev/null ||
    fail "the job's weight files: $(jq -c .files "$TMP/body")"
layers_of "$JOB" >"$TMP/job.sha"
cmp -s "$TMP/local.sha" "$TMP/job.sha" || fail "the job's layers differ from the local run's"
[ "$(grep -c 'fetched .*into the cache' "$TMP/serve.log")" = 12 ] ||
    fail "not 12 files fetched: $(grep fetched "$TMP/serve.log")"
echo "ok: a JSON model's 10 weight files went with the job; its layers are the local run's"
"$AGENT" submit --server "$URL" --model "$TMP/models/lenet.json" --weights-dir "$SEED_DIR/initializer" \
    --input "$SEED_DIR/input.npz" --knob input-key=inp --wait --timeout 120 >"$TMP/json2.txt" \
    2>"$TMP/json2.err" || fail "the second submit exited $?: $(cat "$TMP/json2.err")"
! grep -q uploading "$TMP/json2.err" || fail "the second submit uploaded again"
[ "$(grep -c 'fetched .*into the cache' "$TMP/serve.log")" = 12 ] || fail "the second job fetched again"
layers_of "$(head -n 1 "$TMP/json2.txt")" | cmp -s - "$TMP/local.sha" || fail "the second job's layers"
echo "ok: the same job again: nothing uploaded, nothing fetched, the same layers"

# ---- 2: an ONNX model's external data, in a folder ----
"$PYTHON_NUMPY" "$GD_SRCDIR/tests/onnx/seed_to_onnx.py" "$SEED_MODEL" "$SEED_DIR/initializer" \
    "$TMP/whole.onnx"
mkdir -p "$TMP/onnx/data"
"$PYTHON_NUMPY" -c 'import onnx, sys
m = onnx.load(sys.argv[1])
onnx.save_model(m, sys.argv[2], save_as_external_data=True, all_tensors_to_one_file=True,
                location="data/lenet.bin", size_threshold=0)' "$TMP/whole.onnx" "$TMP/onnx/lenet.onnx"
[ -s "$TMP/onnx/data/lenet.bin" ] || fail "no external data written"
"$AGENT" run --model "$TMP/onnx/lenet.onnx" --input "$SEED_DIR/input.npz" --input-key inp \
    --out "$TMP/local-onnx" >/dev/null
jq -r '[.layers[] | .sha256] | join(" ")' "$TMP/local-onnx/run.json" >"$TMP/onnx.sha"
"$AGENT" submit --server "$URL" --model "$TMP/onnx/lenet.onnx" --input "$SEED_DIR/input.npz" \
    --knob input-key=inp --wait --timeout 120 >"$TMP/onnx.txt" 2>"$TMP/onnx.err" ||
    fail "submit of the ONNX model exited $?: $(cat "$TMP/onnx.err" "$TMP/serve.log")"
grep -q "uploading .*data/lenet.bin (data)" "$TMP/onnx.err" || fail "the external data was not sent"
JOB=$(head -n 1 "$TMP/onnx.txt")
expect 200 GET "/api/v1/jobs/$JOB" -H "$A"
jq -e '[.files[] | select(.role == "data") | .name] == ["data/lenet.bin"]' "$TMP/body" >/dev/null ||
    fail "the job's data files: $(jq -c .files "$TMP/body")"
layers_of "$JOB" | cmp -s - "$TMP/onnx.sha" || fail "the ONNX job's layers differ from the local run's"
echo "ok: an ONNX model's external data (data/lenet.bin) went with the job; the layers match"

# ---- 3: a cached file changed on the agent's disk is checked before the run ----
sha=$(sha256sum "$TMP/onnx/data/lenet.bin" | cut -d' ' -f1)
chmod u+w "$TMP/cache/files/$sha"
printf 'garbage' | dd of="$TMP/cache/files/$sha" bs=1 seek=100 conv=notrunc 2>/dev/null
"$AGENT" submit --server "$URL" --model "$TMP/onnx/lenet.onnx" --input "$SEED_DIR/input.npz" \
    --knob input-key=inp --wait --timeout 120 >"$TMP/again.txt" 2>"$TMP/again.err" ||
    fail "submit after the damage exited $?: $(cat "$TMP/again.err" "$TMP/serve.log")"
grep -q "the cached data/lenet.bin ($sha) no longer has the bytes of its hash: fetching it again" \
    "$TMP/serve.log" || fail "serve did not check the cached file: $(tail -n 8 "$TMP/serve.log")"
layers_of "$(head -n 1 "$TMP/again.txt")" | cmp -s - "$TMP/onnx.sha" ||
    fail "the run after the damage has other layers"
cmp -s "$TMP/cache/files/$sha" "$TMP/onnx/data/lenet.bin" || fail "the cache was not mended"
echo "ok: a damaged cached file was found by its hash before the run, fetched again; same layers"

# the ASan+UBSan build: a report from serve, submit or a child run fails the test
! grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$TMP"/*.log "$TMP"/*.err \
    2>/dev/null || fail "a sanitizer report in the logs above"
