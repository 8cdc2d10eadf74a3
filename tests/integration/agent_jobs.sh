#!/bin/sh
# Jobs end to end on loopback (issue 15 item 1; docs/AGENT.md, "submit" and "serve"): one
# daemon, two `gpudiff-agent serve` agents on one host with different labels, two devices
# (issue 24: their keys hold the labels), a third serve that asks for one of their keys with
# --device-id refused (exit 8, naming both); `submit --wait` of the
# seed case (as ONNX, with the input-key knob) finishes on both; the runs carry the job and
# env.labels, the matrix has both devices; a second job reuses the cached files (no second
# download); a bad knob value fails with run's message and exit code, an unknown knob with
# serve's, a model that is none with run's, without a crash: both agents take the next job.
# The daemon stopped for 3 s: the agents log their retries and go on. A lease lost (the
# agent stopped past lease_seconds): the 409 of its heartbeat ends the run, the second
# attempt finishes. SIGTERM mid-job: the job is finished and reported, then serve exits 0.
# SIGINT mid-job (issue 24): the lease is given back, the task pending with no attempt used;
# the serve started again (the same serve, by its cache's serve-id) runs it to the end.
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
cp "$SEED_DIR/input.npz" "$TMP/input.npz"

SERVE_PIDS=""
stop_agents() {
    for p in $SERVE_PIDS; do kill -TERM "$p" 2>/dev/null || true; done
    for p in $SERVE_PIDS; do wait "$p" 2>/dev/null || true; done
    SERVE_PIDS=""
}
SERVER_EXIT_HOOK=stop_agents
serve() { # NAME GPU-LABEL: a serve on host "vm" (both agents share it), its cache and log named
    "$AGENT" serve --server "$URL" --backend cpu --host vm --label "gpu=$2" \
        --cache "$TMP/cache-$1" --poll-wait 2 2>>"$TMP/serve-$1.log" &
    SERVE_PIDS="$SERVE_PIDS $!"
    eval "PID_$1=$!"
}
serve hostA sm_75
serve hostB sm_86
A="Authorization: Bearer $GPUDIFF_TOKEN"
n=0
until [ "$(api GET /api/v1/agents -H "$A")" = 200 ] &&
    [ "$(jq '.devices | length' "$TMP/body")" = 2 ]; do
    n=$((n + 1)); [ "$n" -le 100 ] || fail "the two agents did not register as two devices: $(cat "$TMP/body" "$TMP"/serve-*.log)"
    sleep 0.1
done
jq -e '[.devices[] | .key] | sort == ["vm/cpu label.gpu=sm_75", "vm/cpu label.gpu=sm_86"]' \
    "$TMP/body" >/dev/null || fail "device keys: $(cat "$TMP/body")"
jq -e '[.devices[] | select(.labels.gpu == "sm_75") | .env.engine_version != null,
    (.agent.serve_id | length) == 36, .agent.host] == [true, true, "vm"]' "$TMP/body" >/dev/null ||
    fail "hostA's env or agent: $(cat "$TMP/body")"
echo "ok: two agents on one host registered two devices, their labels in their keys"
# a third serve asks for the first one's key: refused while that device is live
set +e
"$AGENT" serve --server "$URL" --backend cpu --host other --device-id "vm/cpu label.gpu=sm_75" \
    --cache "$TMP/cache-thief" --poll-wait 2 >/dev/null 2>"$TMP/serve-thief.log"
rc=$?
set -e
[ "$rc" = 8 ] || fail "a serve asking for a live device's key exited $rc: $(cat "$TMP/serve-thief.log")"
grep -q 'is held by vm (serve .*not other (serve' "$TMP/serve-thief.log" &&
    grep -q "of serve $(cat "$TMP/cache-hostA/serve-id") on host vm" "$TMP/serve-thief.log" ||
    fail "the refusal does not name both: $(cat "$TMP/serve-thief.log")"
expect 200 GET /api/v1/agents -H "$A"
jq -e '[.devices[] | .agent.host] | sort == ["vm", "vm"]' "$TMP/body" >/dev/null ||
    fail "the refused serve took a device: $(cat "$TMP/body")"
echo "ok: serve --device-id of a live device's key exits 8: $(grep -m1 'refused' "$TMP/serve-thief.log")"

# ---- a job on both ----
"$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$TMP/input.npz" \
    --name lenet-11-821 --knob input-key=inp --lease-seconds 30 --wait --timeout 60 >"$TMP/submit.txt" \
    2>"$TMP/submit.err" || fail "submit --wait exited $?: $(cat "$TMP/submit.err" "$TMP"/serve-*.log)"
cat "$TMP/submit.txt"
JOB=$(head -n 1 "$TMP/submit.txt")
grep -q "uploading .*lenet.onnx (model)" "$TMP/submit.err" || fail "the model was not uploaded"
[ "$(grep -c ' finished ' "$TMP/submit.txt")" = 2 ] || fail "the table has not two finished rows"
grep -q "job $JOB: 2 finished, 0 failed" "$TMP/submit.err" || fail "no progress line on stderr"
expect 200 GET "/api/v1/jobs/$JOB" -H "$A"
jq -e '.state == "done" and .counts.finished == 2 and .model == "lenet-11-821"
    and ([.tasks[] | .run_id | strings] | length) == 2' "$TMP/body" >/dev/null ||
    fail "the job document: $(cat "$TMP/body")"
RUN_A=$(jq -r '.tasks[] | select(.device.labels.gpu == "sm_75") | .run_id' "$TMP/body")
expect 200 GET "/api/v1/runs/$RUN_A" -H "$A"
jq -e --arg j "$JOB" '.job.id == $j and (.job.lease | length) > 0 and .env.labels.gpu == "sm_75"
    and .model.name == "lenet-11-821" and .backend == "cpu"' "$TMP/body" >/dev/null ||
    fail "hostA's run does not record the job and its labels: $(head -c 800 "$TMP/body")"
echo "ok: submit --wait: the job finished on both; hostA's run records the job and env.labels"
# the same layers as a run made here by hand (the job ran the seed, nothing else)
"$AGENT" run --model "$TMP/lenet.onnx" --input "$TMP/input.npz" --input-key inp \
    --out "$TMP/local" --json >/dev/null
jq -r '[.layers[] | .sha256] | join(" ")' "$TMP/local/run.json" >"$TMP/local.sha"
jq -r '[.layers[] | .sha256] | join(" ")' "$TMP/body" >"$TMP/job.sha"
cmp -s "$TMP/local.sha" "$TMP/job.sha" || fail "the job's layers differ from a local run's"
echo "ok: the job's layers are the bits of the same run made by hand"

expect 200 GET /api/v1/models/lenet-11-821/matrix -H "$A"
jq -e '(.devices | length) == 2 and ([.devices[].key | test("label.gpu=sm_75")] | any)
    and ([.devices[].key | test("label.gpu=sm_86")] | any)' "$TMP/body" >/dev/null ||
    fail "the matrix has not the two devices: $(head -c 800 "$TMP/body")"
echo "ok: the matrix has both devices, told apart by their labels"

# ---- a bad knob value: refused by submit with run's message; a knob a device's backend does
# not take: run's message and exit code there; an unknown knob: serve's ----
expect_exit 2 "$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$TMP/input.npz" \
    --knob input-key=inp --knob threads=0
grep -q -- "--knob threads takes auto or 1 to 256, not 0" "$TMP/err.txt" ||
    fail "submit took a bad knob value"
set +e
"$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$TMP/input.npz" \
    --knob input-key=inp --knob conv_algo=autotune --wait --timeout 60 >"$TMP/bad.txt" 2>"$TMP/bad.err"
rc=$?
set -e
[ "$rc" = 10 ] || fail "submit of a cuda knob to cpu devices exited $rc, not 10: $(cat "$TMP/bad.err")"
! grep -q "uploading" "$TMP/bad.err" || fail "a second job uploaded the files again"
BAD=$(head -n 1 "$TMP/bad.txt")
expect 200 GET "/api/v1/jobs/$BAD" -H "$A"
jq -e '.counts.failed == 2 and ([.tasks[] | .error | test("--conv-algo is for the cuda backend, not cpu")]
    | all)' "$TMP/body" >/dev/null || fail "bad knob: $(cat "$TMP/body")"
echo "ok: threads=0 refused by submit; conv_algo failed on both cpu devices with run's message; submit --wait exited 10"
printf '{"model": "lenet-11-821", "knobs": {"warp-speed": 9}, "match": {"labels.gpu": "sm_86"},
  "files": [{"role": "model", "name": "lenet.onnx", "sha256": "%s"},
            {"role": "input", "name": "input.npz", "sha256": "%s"}]}' \
    "$(sha256sum "$TMP/lenet.onnx" | cut -d' ' -f1)" "$(sha256sum "$TMP/input.npz" | cut -d' ' -f1)" \
    >"$TMP/unknown.json"
expect 201 POST /api/v1/jobs -H "$A" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/unknown.json"
UNK=$(jq -r .id "$TMP/body")
n=0
until [ "$(api GET "/api/v1/jobs/$UNK" -H "$A")" = 200 ] &&
    [ "$(jq -r .state "$TMP/body")" = done ]; do
    n=$((n + 1)); [ "$n" -le 200 ] || fail "the unknown knob's job did not end: $(cat "$TMP/body")"
    sleep 0.1
done
jq -e '.counts.failed == 1 and (.tasks[0].error | test("unknown knob \"warp-speed\""))
    and .tasks[0].device.labels.gpu == "sm_86"' "$TMP/body" >/dev/null ||
    fail "unknown knob: $(cat "$TMP/body")"
echo "ok: an unknown knob failed on the one device matched, with serve's message"

# both agents are alive and take the next job; the files come from their caches
"$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$TMP/input.npz" \
    --knob input-key=inp --knob batch=250 --wait --timeout 60 >"$TMP/again.txt" \
    2>"$TMP/again.err" || fail "the job after the failures exited $?: $(cat "$TMP/again.err")"
[ "$(grep -c ' finished ' "$TMP/again.txt")" = 2 ] || fail "the last job did not finish on both"
for h in hostA hostB; do
    [ "$(grep -c 'fetched' "$TMP/serve-$h.log")" = 2 ] ||
        fail "$h fetched files more than once: $(grep fetched "$TMP/serve-$h.log")"
    # serve removes a lease's folder right after reporting it: submit may see the job done
    # first (a race the sanitized build showed), so give it a moment
    n=0
    while [ -n "$(ls "$TMP/cache-$h/work")" ] && [ "$n" -lt 50 ]; do n=$((n + 1)); sleep 0.1; done
    [ -z "$(ls "$TMP/cache-$h/work")" ] || fail "$h left a work folder"
    ! ls "$TMP/cache-$h/files" | grep -q tmp || fail "$h left a temporary file"
done
echo "ok: both agents ran the next job (batch=250) from their caches: each file fetched once"

# ---- a model that is no model: run's error, serve goes on ----
printf "not a model at all, only text\n" >"$TMP/garbage.onnx"
set +e
"$AGENT" submit --server "$URL" --model "$TMP/garbage.onnx" --input "$TMP/input.npz" \
    --match labels.gpu=sm_75 --wait --timeout 60 >"$TMP/garbage.txt" 2>"$TMP/garbage.err"
rc=$?
set -e
[ "$rc" = 10 ] || fail "submit of a garbage model exited $rc: $(cat "$TMP/garbage.err")"
expect 200 GET "/api/v1/jobs/$(head -n 1 "$TMP/garbage.txt")" -H "$A"
jq -e '.counts.failed == 1 and (.tasks[0].error | test("^garbage.onnx: not a valid ONNX")) and
    (.tasks[0].error | test("^gpudiff-agent") | not)' "$TMP/body" >/dev/null ||
    fail "garbage model: $(cat "$TMP/body")"
echo "ok: a model that is no model fails on hostA with run's error: $(jq -r '.tasks[0].error' "$TMP/body")"

# ---- the daemon away for a while: the agents retry with backoff, then go on ----
port=${URL##*:}
server_stop
sleep 3
server_start --listen "127.0.0.1:$port"
[ "$URL" = "http://127.0.0.1:$port" ] || fail "the daemon came back on $URL, not port $port"
for h in hostA hostB; do
    grep -q "Couldn't connect to server; retry 2 in" "$TMP/serve-$h.log" ||
        fail "$h did not log its retries: $(tail -n 5 "$TMP/serve-$h.log")"
done
"$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$TMP/input.npz" \
    --knob input-key=inp --wait --timeout 90 >"$TMP/back.txt" 2>"$TMP/back.err" ||
    fail "the job after the daemon's restart exited $?: $(cat "$TMP/back.err")"
[ "$(grep -c ' finished ' "$TMP/back.txt")" = 2 ] || fail "not both after the restart"
echo "ok: with the daemon down both agents logged retries with backoff, then ran the next job"

# ---- a lease lost: hostB (serve and run) stopped past lease_seconds; once it is back, the
# heartbeat's 409 stops the run, and the second attempt finishes ----
"$PYTHON_NUMPY" -c 'import numpy, sys
numpy.save(sys.argv[2], numpy.tile(numpy.load(sys.argv[1])["inp"], (8, 1, 1, 1)))' \
    "$SEED_DIR/input.npz" "$TMP/big.npy"
runs=$(grep -c 'running (lease' "$TMP/serve-hostB.log")
"$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$TMP/big.npy" \
    --match labels.gpu=sm_86 --knob threads=1 --knob capture=fingerprint --lease-seconds 10 \
    --attempts 2 --wait --timeout 90 >"$TMP/lost.txt" 2>"$TMP/lost.err" &
submit_pid=$!
child=""
n=0
until [ -n "$child" ]; do
    n=$((n + 1)); [ "$n" -le 300 ] || fail "hostB did not start the long job"
    sleep 0.1
    [ "$(grep -c 'running (lease' "$TMP/serve-hostB.log")" -gt "$runs" ] || continue
    child=$(ps -o pid= --ppid "$PID_hostB" | tr -d ' ' | head -n 1)
done
kill -STOP "$PID_hostB" "$child"
sleep 12
kill -CONT "$PID_hostB"
sleep 1
kill -CONT "$child" 2>/dev/null || true
wait "$submit_pid" || fail "the job of the lost lease exited $?: $(cat "$TMP/lost.err")"
grep -q "the daemon took the lease back (lease_lost" "$TMP/serve-hostB.log" ||
    fail "hostB did not see its lease lost: $(tail -n 5 "$TMP/serve-hostB.log")"
! kill -0 "$child" 2>/dev/null || fail "the run of the lost lease still runs"
expect 200 GET "/api/v1/jobs/$(head -n 1 "$TMP/lost.txt")" -H "$A"
jq -e '.counts.finished == 1 and .tasks[0].attempts_used == 2' "$TMP/body" >/dev/null ||
    fail "the lost lease's job: $(cat "$TMP/body")"
echo "ok: a lease lost while hostB was stopped: its heartbeat's 409 ended the run; attempt 2 finished"

# ---- SIGTERM mid-job: serve finishes and reports the job, then exits 0 ----
runs=$(grep -c 'running (lease' "$TMP/serve-hostA.log")
"$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$TMP/big.npy" \
    --match labels.gpu=sm_75 --knob threads=1 --knob capture=fingerprint --wait --timeout 90 \
    >"$TMP/term.txt" 2>"$TMP/term.err" &
submit_pid=$!
n=0
until [ "$(grep -c 'running (lease' "$TMP/serve-hostA.log")" -gt "$runs" ]; do
    n=$((n + 1)); [ "$n" -le 300 ] || fail "hostA did not start the long job"
    sleep 0.1
done
PID_A=$PID_hostA
kill -TERM "$PID_A"
wait "$PID_A" || fail "serve exited $? after SIGTERM mid-job"
wait "$submit_pid" || fail "the job serve finished at SIGTERM exited $?: $(cat "$TMP/term.err")"
grep -q ' finished ' "$TMP/term.txt" || fail "the job is not finished: $(cat "$TMP/term.txt")"
grep -q "reported done" "$TMP/serve-hostA.log" || fail "hostA did not report done"
echo "ok: SIGTERM during a job: hostA finished it, reported done and exited 0"
SERVE_PIDS=${SERVE_PIDS#* $PID_A}

# ---- SIGINT mid-job: the lease is given back; the same serve started again finishes it ----
serve hostA sm_75
runs=$(grep -c 'running (lease' "$TMP/serve-hostA.log")
"$AGENT" submit --server "$URL" --model "$TMP/lenet.onnx" --input "$TMP/big.npy" \
    --match labels.gpu=sm_75 --knob threads=1 --knob capture=fingerprint --wait --timeout 120 \
    >"$TMP/int.txt" 2>"$TMP/int.err" &
submit_pid=$!
n=0
until [ "$(grep -c 'running (lease' "$TMP/serve-hostA.log")" -gt "$runs" ]; do
    n=$((n + 1)); [ "$n" -le 300 ] || fail "hostA did not start the job of the SIGINT"
    sleep 0.1
done
kill -INT "$PID_hostA"
wait "$PID_hostA" || fail "serve exited $? after SIGINT mid-job"
SERVE_PIDS=$(for p in $SERVE_PIDS; do [ "$p" = "$PID_hostA" ] || printf ' %s' "$p"; done)
grep -q "gave lease .* back (serve was stopped while the run went on)" "$TMP/serve-hostA.log" ||
    fail "hostA did not give its lease back: $(tail -n 5 "$TMP/serve-hostA.log")"
expect 200 GET "/api/v1/jobs?limit=1" -H "$A"
jq -e '.jobs[0].tasks[0] | .state == "pending" and .attempts_used == 0' "$TMP/body" >/dev/null ||
    fail "the task given back: $(cat "$TMP/body")"
echo "ok: SIGINT during a job: hostA stopped its run and gave the lease back; the task is pending"
serve hostA sm_75
wait "$submit_pid" || fail "the job given back did not finish after the restart: $(cat "$TMP/int.err")"
grep -q ' finished ' "$TMP/int.txt" || fail "not finished: $(cat "$TMP/int.txt")"
expect 200 GET "/api/v1/jobs?limit=1" -H "$A"
jq -e '.jobs[0].tasks[0] | .state == "finished" and .attempts_used == 1' "$TMP/body" >/dev/null ||
    fail "the restarted serve's run: $(cat "$TMP/body")"
grep -q "waiting on vm/cpu label.gpu=sm_75 (pending)" "$TMP/int.err" ||
    fail "the progress line names no device: $(cat "$TMP/int.err")"
echo "ok: the serve started again took the task back and finished it (1 attempt used)"

for p in $SERVE_PIDS; do kill -TERM "$p"; done
for p in $SERVE_PIDS; do wait "$p" || fail "serve exited $? at SIGTERM"; done
SERVE_PIDS=""
grep -q "stopped by a signal" "$TMP/serve-hostB.log" || fail "no stop message"
echo "ok: SIGTERM stops the idle agent with exit 0"
# the ASan+UBSan build: a report from serve, submit or a child run fails the test
! grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$TMP"/*.log "$TMP"/*.err \
    2>/dev/null || fail "a sanitizer report in the logs above"
