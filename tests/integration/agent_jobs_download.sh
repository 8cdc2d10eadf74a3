#!/bin/sh
# A job file that takes longer to download than the lease lasts (docs/AGENT.md, "serve"):
# serve --max-download-rate 64K fetches the seed's 3.1 MB input.npz (nominally 48 s; 35 to
# 41 s here: libcurl's limit lets bursts through, 128K gave 12 to 20 s) under a lease of 10 s
# and one attempt. The heartbeats go on during the download on their own connection, so the
# lease holds, the job finishes on its first attempt, and the cached file is the file
# submitted. Before, the one heartbeat after each file came too late: the daemon took the
# lease back and marked the device failed.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
need_numpy
"$PYTHON_NUMPY" -c 'import onnx' 2>/dev/null || skip "$PYTHON_NUMPY has no onnx module (python3-onnx)"

export GPUDIFF_TOKEN
GPUDIFF_TOKEN=$(token agent)
server_start
"$PYTHON_NUMPY" "$GD_SRCDIR/tests/onnx/seed_to_onnx.py" "$SEED_MODEL" "$SEED_DIR/initializer" \
    "$TMP/lenet.onnx"

"$AGENT" serve --server "$URL" --backend cpu --host slow --cache "$TMP/cache" --poll-wait 2 \
    --max-download-rate 64K 2>"$TMP/serve.log" &
SERVE_PID=$!
SERVER_EXIT_HOOK='kill -TERM "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID" 2>/dev/null'
A="Authorization: Bearer $GPUDIFF_TOKEN"

start=$(date +%s)
"$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$SEED_DIR/input.npz" \
    --name lenet-11-821 --knob input-key=inp --lease-seconds 10 \
    --attempts 1 --wait --timeout 90 >"$TMP/submit.txt" 2>"$TMP/submit.err" ||
    fail "submit --wait exited $?: $(cat "$TMP/submit.err" "$TMP/serve.log")"
took=$(($(date +%s) - start))
JOB=$(head -n 1 "$TMP/submit.txt")
expect 200 GET "/api/v1/jobs/$JOB" -H "$A"
jq -e '.state == "done" and .counts.finished == 1 and .counts.failed == 0
    and .tasks[0].attempts_used == 1' "$TMP/body" >/dev/null ||
    fail "the job: $(cat "$TMP/body") $(cat "$TMP/serve.log")"
grep -q "fetched input.npz" "$TMP/serve.log" || fail "no input fetched: $(cat "$TMP/serve.log")"
! grep -q "took the lease back" "$TMP/serve.log" ||
    fail "the lease was lost: $(cat "$TMP/serve.log")"
sha=$(sha256sum "$SEED_DIR/input.npz" | cut -d' ' -f1)
# the download itself, as serve timed it, outlasted the lease
secs=$(sed -n "s|.*fetched input.npz ($sha) into the cache in \([0-9]*\)\.[0-9] s|\1|p" \
    "$TMP/serve.log")
[ -n "$secs" ] && [ "$secs" -gt 10 ] ||
    fail "the input's download took ${secs:-?} s, not longer than the 10 s lease"
cmp -s "$SEED_DIR/input.npz" "$TMP/cache/files/$sha" ||
    fail "the cached input is not the one submitted"
echo "ok: a 3.1 MB input at 64 KB/s: its download took $secs s under a 10 s lease; the job" \
    "($took s) finished on attempt 1"

# the ASan+UBSan build: a report from serve, submit or the child run fails the test
! grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$TMP"/*.log "$TMP"/*.err \
    2>/dev/null || fail "a sanitizer report in the logs above"
