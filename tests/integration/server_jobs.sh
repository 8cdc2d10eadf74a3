#!/bin/sh
# Jobs, devices and leases (issue 15 item 1; docs/SERVER.md, "Jobs, devices and leases"),
# driven with curl alone, no agent serving: files uploaded by SHA-256 (a wrong hash keeps
# nothing), three devices registered with labels, jobs submitted with match filters (and
# refused: bad fields, no device, missing files), one task polled, kept alive by a heartbeat
# past its first lease_until and done with a run, one failed by its agent, one left to expire
# (lease_seconds 10) and failed with the expiry's error, one with two attempts that expires,
# goes back to pending and is leased again. A done or failed task is never leased again; a
# long poll waits and wakes for a job submitted meanwhile, beyond --max-polls it is 503
# with Retry-After, and waiting polls do not hold up other requests. The daemon is restarted
# mid-way: every state stays. Issue 24: a key another serve holds is refused (409 naming
# both); a lease no heartbeat confirms is withdrawn (no attempt used); a poll whose client
# has gone takes nothing; a lease given back is pending again; an admin removes a device and
# its task ends. tests/integration/server_pg.sh runs it on PostgreSQL too.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed

AGENT_TOKEN=$(token agent)
VIEWER_TOKEN=$(token viewer)
A="Authorization: Bearer $AGENT_TOKEN"
V="Authorization: Bearer $VIEWER_TOKEN"
JSON='Content-Type: application/json'
server_start --require-auth-read
t0=$(date +%s)

body() { jq -r "$1" "$TMP/body"; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
# check JQ-EXPR WHAT: the last body must satisfy the expression.
check() {
    jq -e "$1" "$TMP/body" >/dev/null || fail "$2: $(head -c 1500 "$TMP/body")"
    echo "ok: $2"
}

# ---- files ----
head -c 300000 /dev/urandom > "$TMP/model.onnx"
head -c 4096 /dev/urandom > "$TMP/input.npy"
head -c 70000 /dev/urandom > "$TMP/weights.bin"
M=$(sha "$TMP/model.onnx")
I=$(sha "$TMP/input.npy")
W=$(sha "$TMP/weights.bin")
expect_error 400 hash_mismatch PUT "/api/v1/files/$I" -H "$A" -T "$TMP/model.onnx"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')" = 0 ] || fail "a mismatched file left a blob"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM fleet_files')" = 0 ] || fail "a mismatched file is recorded"
expect_error 404 not_found GET "/api/v1/files/$I" -H "$A"
expect_error 400 bad_request PUT "/api/v1/files/ABC" -H "$A" -T "$TMP/input.npy"
expect_error 403 forbidden PUT "/api/v1/files/$M" -H "$V" -T "$TMP/model.onnx"
expect 201 PUT "/api/v1/files/$M" -H "$A" -T "$TMP/model.onnx"
check ".sha256 == \"$M\" and .bytes == 300000 and .created == true" "a model file stored (201)"
expect 200 PUT "/api/v1/files/$M" -H "$A" -T "$TMP/model.onnx"
check '.created == false and .bytes == 300000' "the same file again: 200, created false"
expect 201 PUT "/api/v1/files/$I" -H "$A" -T "$TMP/input.npy"
curl -sf -H "$A" -o "$TMP/back.onnx" "$URL/api/v1/files/$M" || fail "GET file"
cmp -s "$TMP/model.onnx" "$TMP/back.onnx" || fail "the file read back differs"
echo "ok: GET /api/v1/files gives the bytes back"
expect_error 403 forbidden GET "/api/v1/files/$M" -H "$V"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')" = 2 ] || fail "not one blob per file"

# ---- devices ----
serve_of() { # HOST: the serve_id of that host's serve (hN: ...0N)
    printf '00000000-0000-4000-8000-%012d' "${1#h}"
}
register_json() { # HOST GPU-LABEL SERVE-ID [KEY]
    printf '{"host": "%s", "agent_version": "0.test", "serve_id": "%s", "devices": [{"key": "%s",
        "backend": "cpu", "env": {"host": "%s", "cpu": "test"}, "labels": {"gpu": "%s"}}]}' \
        "$1" "$3" "${4:-$1/cpu}" "$1" "$2" > "$TMP/reg.json"
}
register() { # HOST GPU-LABEL: registers HOST/cpu as HOST's serve; prints the agent id
    register_json "$1" "$2" "$(serve_of "$1")"
    st=$(api POST /api/v1/agents -H "$A" -H "$JSON" --data-binary @"$TMP/reg.json")
    [ "$st" = 200 ] || fail "register $1: $st $(cat "$TMP/body")"
    body .agent_id
}
AG1=$(register h1 sm_75)
AG2=$(register h2 sm_86)
AG3=$(register h3 v100)
expect_error 400 bad_request POST /api/v1/agents -H "$A" -H "$JSON" \
    --data-binary '{"host": "h4", "agent_version": "0", "devices": [{"key": "h4/x", "backend": "tpu", "env": {}}]}'
expect_error 400 bad_request POST /api/v1/agents -H "$A" -H "$JSON" \
    --data-binary '{"host": "h4", "agent_version": "0", "devices": [], "extra": 1}'
expect 200 GET /api/v1/agents -H "$V"
check '[.devices[].key] | sort == ["h1/cpu", "h2/cpu", "h3/cpu"]' "three devices registered"
check '[.devices[] | select(.key == "h2/cpu") | .labels.gpu] == ["sm_86"]' "labels kept"
# serve restarted on h1: the same device id, a new agent id
D1=$(jq -r '.devices[] | select(.key == "h1/cpu") | .id' "$TMP/body")
AG1B=$(register h1 sm_75)
[ "$AG1B" != "$AG1" ] || fail "a second registration kept the agent id"
[ "$(jq -r '.devices[0].id' "$TMP/body")" = "$D1" ] || fail "a registered key again got a new id"
echo "ok: registering a key again keeps the device id"
AG1=$AG1B
# another serve (on h9) asks for h2's key while h2's device is live: refused, naming both
register_json h9 sm_99 "$(serve_of h9)" h2/cpu
expect_error 409 conflict POST /api/v1/agents -H "$A" -H "$JSON" --data-binary @"$TMP/reg.json"
check '.error.held_by.host == "h2" and .error.held_by.key == "h2/cpu" and
    .error.held_by.serve_id == "00000000-0000-4000-8000-000000000002" and
    .error.refused.host == "h9" and (.error.message | test("held by h2 .*not h9"))' \
    "a live device's key is not taken by another serve: 409 names both"
expect 200 GET /api/v1/agents -H "$V"
check '[.devices[] | select(.key == "h2/cpu") | .agent.host, .agent.serve_id, .state] ==
    ["h2", "00000000-0000-4000-8000-000000000002", "live"] and .stale_seconds == 120 and
    ([.devices[] | .agent.id, .last_seen | strings] | length) == 6' \
    "the device list gives each device's agent and last heartbeat"

# ---- submissions ----
job() { # MATCH [JQ-FILTER]: a job body of the model and input files, changed by the filter
    jq -n --arg m "$M" --arg i "$I" --arg w "$W" --argjson match "$1" \
        "{model: \"lenet\", files: [{role: \"model\", name: \"model.onnx\", sha256: \$m},
          {role: \"input\", name: \"input.npy\", sha256: \$i}], knobs: {batch: 4},
          match: \$match} | ${2:-.}" > "$TMP/job.json"
}
submit_bad() { # STATUS CODE JQ-FILTER: the job changed by the filter is refused
    jq "$3" "$TMP/job.json" > "$TMP/bad.json"
    expect_error "$1" "$2" POST /api/v1/jobs -H "$A" -H "$JSON" --data-binary @"$TMP/bad.json"
}
job '{}'
submit_bad 400 bad_request '.lease_seconds = 5'
submit_bad 400 bad_request '.attempts = 11'
submit_bad 400 bad_request '.files = [.files[0]]'
submit_bad 400 bad_request '.files[1].name = "../input.npy"'
submit_bad 400 bad_request '.files[1].sha256 = "abc"'
submit_bad 400 bad_request '.files[1].role = "weights"'
submit_bad 400 bad_request '.match = {"gpu": "sm_75"}'
submit_bad 400 bad_request '.match = {"labels.gpu": []}'
submit_bad 400 bad_request '.knobs = {"batch": [4]}'
submit_bad 400 bad_request '.model = ""'
submit_bad 400 bad_request '.surprise = true'
submit_bad 400 no_device '.match = {"labels.gpu": "sm_99"}'
submit_bad 409 missing_files ".files += [{role: \"data\", name: \"weights.bin\", sha256: \"$W\"}]"
check ".missing == [\"$W\"] and .error.missing == [\"$W\"]" "missing_files names the file lacking"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM fleet_jobs')" = 0 ] || fail "a refused job was stored"
expect 201 PUT "/api/v1/files/$W" -H "$A" -T "$TMP/weights.bin"

WITH_DATA='.files += [{role: "data", name: "weights.bin", sha256: $w}]'
job '{"backend": "cpu", "labels.gpu": ["sm_75", "sm_86", "v100"]}' \
    "$WITH_DATA | .lease_seconds = 10"
expect_error 400 bad_json POST /api/v1/jobs -H "$A" -H "$JSON" \
    --data-binary '{"model": "a", "model": "b"}'
expect 201 POST /api/v1/jobs -H "$A" -H "$JSON" --data-binary @"$TMP/job.json"
J1=$(body .id)
check '.state == "running" and .counts.pending == 3 and (.tasks | length) == 3 and
    .lease_seconds == 10 and .attempts == 1 and .knobs.batch == 4 and (.files | length) == 3' \
    "job 1: three pending tasks"
job '{"key": "h3/cpu"}' '.lease_seconds = 10 | .attempts = 2'
expect 201 POST /api/v1/jobs -H "$A" -H "$JSON" --data-binary @"$TMP/job.json"
J2=$(body .id)
check '.counts.pending == 1 and .tasks[0].device.key == "h3/cpu"' "job 2: one task, on h3"

# A run for job 1's done: the seed case, trimmed to its small layers, uploaded whole; and the
# same with another id, created but never finished.
seed_bundle "$TMP/seed"
jq '.layers = [.layers[2:] | to_entries[] | .value + {index: .key} | del(.fingerprint)]' \
    "$TMP/seed/run.json" > "$TMP/seed/run.small.json"
mv "$TMP/seed/run.small.json" "$TMP/seed/run.json"
RUN=$(jq -r .id "$TMP/seed/run.json")
upload_bundle "$TMP/seed" "$AGENT_TOKEN"
RUN_UP=33333333-3333-4333-8333-333333333333
jq --arg id "$RUN_UP" '.id = $id' "$TMP/seed/run.json" > "$TMP/run_up.json"
expect 201 POST /api/v1/runs -H "$A" -H "$JSON" --data-binary @"$TMP/run_up.json"

# ---- leases ----
poll() { # AGENT WAIT: prints the status; the lease in $TMP/body
    api POST "/api/v1/agents/$1/poll?wait=$2" -H "$A"
}
[ "$(poll "$AG1" 0)" = 200 ] || fail "poll h1: $(cat "$TMP/body")"
check ".job_id == \"$J1\" and .device_key == \"h1/cpu\" and .attempt == 1 and
    .lease_seconds == 10 and .model == \"lenet\" and (.files | length) == 3 and
    .knobs.batch == 4" "h1 leases its task of job 1"
L1=$(body .lease_id)
L1_UNTIL=$(body .lease_until)
[ "$(poll "$AG2" 0)" = 200 ] || fail "poll h2"
L2=$(body .lease_id)
[ "$(poll "$AG3" 0)" = 200 ] || fail "poll h3"
check ".job_id == \"$J1\"" "h3 gets the oldest job first"
L3=$(body .lease_id)
[ "$(poll "$AG3" 0)" = 200 ] || fail "poll h3 again"
check ".job_id == \"$J2\" and .attempt == 1 and .confirm_seconds == 10" "then job 2"
L4=$(body .lease_id)
# each lease is an offer until its first heartbeat (serve sends it at once)
for l in "$L1" "$L2" "$L3" "$L4"; do
    expect 200 POST "/api/v1/leases/$l/heartbeat" -H "$A"
done
t_lease=$(date +%s)
[ "$(poll "$AG3" 0)" = 204 ] || fail "a third poll of h3 got work: $(cat "$TMP/body")"
expect_error 404 not_found POST "/api/v1/agents/11111111-1111-4111-8111-111111111111/poll?wait=0" -H "$A"
expect_error 400 bad_request POST "/api/v1/agents/$AG1/poll?wait=61" -H "$A"

expect 200 POST "/api/v1/leases/$L2/fail" -H "$A" -H "$JSON" \
    --data-binary '{"error": "gpudiff-agent run: exit 3: no such op", "exit_code": 3}'
expect_error 409 lease_lost POST "/api/v1/leases/$L2/heartbeat" -H "$A"
expect_error 409 lease_lost POST "/api/v1/leases/$L2/fail" -H "$A" -H "$JSON" \
    --data-binary '{"error": "again"}'

expect_error 400 bad_request POST "/api/v1/leases/$L1/done" -H "$A" -H "$JSON" \
    --data-binary "{\"run_id\": \"$RUN_UP\"}"
expect_error 400 bad_request POST "/api/v1/leases/$L1/done" -H "$A" -H "$JSON" \
    --data-binary '{"run_id": "22222222-2222-4222-8222-222222222222"}'

# The heartbeat after 6 s carries L1 past its first lease_until.
sleep_to() { d=$(($1 - ($(date +%s) - t_lease))); [ "$d" -le 0 ] || sleep "$d"; }
sleep_to 6
expect 200 POST "/api/v1/leases/$L1/heartbeat" -H "$A"
until1=$(body .lease_until)
[ "$until1" \> "$L1_UNTIL" ] || fail "the heartbeat did not extend the lease ($until1, $L1_UNTIL)"
echo "ok: a heartbeat extends lease_until from $L1_UNTIL to $until1"
sleep_to 12
expect 200 POST "/api/v1/leases/$L1/done" -H "$A" -H "$JSON" --data-binary "{\"run_id\": \"$RUN\"}"
echo "ok: done after the first lease_until had passed (the heartbeat kept it)"
expect_error 409 lease_lost POST "/api/v1/leases/$L1/done" -H "$A" -H "$JSON" \
    --data-binary "{\"run_id\": \"$RUN\"}"
expect_error 409 lease_lost POST "/api/v1/leases/$L3/heartbeat" -H "$A"
expect 200 GET "/api/v1/jobs/$J1" -H "$V"
check '.state == "done" and .counts == {"pending": 0, "leased": 0, "finished": 1,
    "failed": 2, "never_answered": 0}' "job 1: done, one finished, two failed"
check "[.tasks[] | select(.device.key == \"h1/cpu\")][0] | .state == \"finished\" and
    .run_id == \"$RUN\" and .attempts_used == 1 and .error == null" "h1 finished with its run"
check '[.tasks[] | select(.device.key == "h2/cpu")][0] | .state == "failed" and
    .error == "gpudiff-agent run: exit 3: no such op"' "h2 failed with its agent's error"
check '[.tasks[] | select(.device.key == "h3/cpu")][0] | .state == "failed" and
    (.error | test("^lease expired: no heartbeat from h3/cpu for [0-9]+ s \\(attempt 1 of 1\\)$"))' \
    "h3 failed with the expiry's error"
expect 200 GET "/api/v1/jobs/$J2" -H "$V"
check '.state == "running" and .tasks[0].state == "pending" and .tasks[0].attempts_used == 1' \
    "job 2: expired with an attempt left, pending again"
[ "$(poll "$AG3" 0)" = 200 ] || fail "h3 does not get job 2 again"
check ".job_id == \"$J2\" and .attempt == 2" "h3 takes job 2 again: attempt 2"
L5=$(body .lease_id)
expect 200 POST "/api/v1/leases/$L5/heartbeat" -H "$A"
expect_error 409 lease_lost POST "/api/v1/leases/$L4/done" -H "$A" -H "$JSON" \
    --data-binary "{\"run_id\": \"$RUN\"}"
for ag in "$AG1" "$AG2"; do
    [ "$(poll "$ag" 0)" = 204 ] || fail "a finished or failed task was leased again"
done
echo "ok: finished and failed tasks are never leased again"

# ---- the daemon restarted: everything stays ----
expect 200 GET "/api/v1/jobs/$J1" -H "$V"
jq -S 'del(.tasks[].updated)' "$TMP/body" > "$TMP/j1.before"
server_stop
server_start --require-auth-read --max-polls 2 --threads 1 --lease-confirm-seconds 2
expect 200 GET "/api/v1/jobs/$J1" -H "$V"
jq -S 'del(.tasks[].updated)' "$TMP/body" | cmp -s - "$TMP/j1.before" ||
    fail "job 1 changed across a restart"
expect 200 POST "/api/v1/leases/$L5/heartbeat" -H "$A"
echo "ok: after a restart, job 1 is as it was and job 2's lease is live"
# job 2 ends here, failed by its agent: left alone, its lease (10 s) would expire during the
# long polls below, and the task counts read after them would depend on the timing
expect 200 POST "/api/v1/leases/$L5/fail" -H "$A" -H "$JSON" \
    --data-binary '{"error": "stopped by the test", "exit_code": 1}'
expect 200 GET "/api/v1/jobs/$J2" -H "$V"
check '.state == "done" and .tasks[0].state == "failed" and .tasks[0].error == "stopped by the test"' \
    "job 2 failed by its agent on attempt 2"
expect 200 GET "/api/v1/jobs?limit=5" -H "$V"
check "[.jobs[].id] == [\"$J2\", \"$J1\"]" "the job list, newest first"

# ---- long polls ----
s0=$(date +%s.%N)
[ "$(poll "$AG1" 2)" = 204 ] || fail "an idle long poll got work"
s1=$(date +%s.%N)
awk -v a="$s0" -v b="$s1" 'BEGIN { exit !(b - a >= 1.8 && b - a < 4) }' ||
    fail "a 2 s long poll took $s0..$s1"
echo "ok: an idle long poll answers 204 after its wait"
curl -s -o "$TMP/lp.json" -w '%{http_code} %{time_total}' -X POST -H "$A" \
    "$URL/api/v1/agents/$AG1/poll?wait=20" > "$TMP/lp.status" &
lp=$!
sleep 1
job '{"key": "h1/cpu"}'
expect 201 POST /api/v1/jobs -H "$A" -H "$JSON" --data-binary @"$TMP/job.json"
J3=$(body .id)
wait "$lp"
code=$(cut -d' ' -f1 "$TMP/lp.status")
secs=$(cut -d' ' -f2 "$TMP/lp.status")
[ "$code" = 200 ] && jq -e ".job_id == \"$J3\"" "$TMP/lp.json" >/dev/null ||
    fail "the waiting poll did not get job 3: $code $(cat "$TMP/lp.json")"
awk -v s="$secs" 'BEGIN { exit !(s < 6) }' || fail "the waiting poll took $secs s of its 20"
echo "ok: a waiting long poll wakes for a job submitted meanwhile ($secs s)"
# two polls of agents without work fill --max-polls 2; a third is refused at once
pids=""
for ag in "$AG2" "$AG3"; do
    curl -s -o /dev/null -X POST -H "$A" "$URL/api/v1/agents/$ag/poll?wait=6" &
    pids="$pids $!"
done
sleep 1
st=$(curl -sS -D "$TMP/head" -o "$TMP/body" -w '%{http_code}' -X POST -H "$A" \
    "$URL/api/v1/agents/$AG1/poll?wait=0")
[ "$st" = 503 ] && [ "$(body .error.code)" = busy ] || fail "a third poll: $st $(cat "$TMP/body")"
grep -qi '^Retry-After: 1' "$TMP/head" || fail "a 503 poll has no Retry-After: $(cat "$TMP/head")"
echo "ok: a poll beyond --max-polls is 503 busy with Retry-After: $(body .error.message)"
# polls waiting hold neither a connection thread (the daemon has one: --threads 1) nor a
# database connection: reads answer while both wait
s0=$(date +%s.%N)
expect 200 GET /api/v1/agents -H "$V"
expect 200 GET "/api/v1/jobs/$J3" -H "$V"
s1=$(date +%s.%N)
awk -v a="$s0" -v b="$s1" 'BEGIN { exit !(b - a < 2) }' ||
    fail "reads took $s0..$s1 beside two waiting polls"
echo "ok: reads answer at once beside the waiting polls, on one connection thread"
for p in $pids; do wait "$p" || true; done

# ---- leases only to live agents (issue 24) ----
# job 3's lease went to a poll that nothing confirmed: after --lease-confirm-seconds 2 the
# offer is withdrawn, the task pending again with its attempt not counted
L_J3=$(jq -r .lease_id "$TMP/lp.json")
sleep 2.5
expect 200 GET "/api/v1/jobs/$J3" -H "$V"
check '.tasks[0].state == "pending" and .tasks[0].attempts_used == 0' \
    "an offer no heartbeat confirmed is withdrawn: pending, no attempt used"
expect_error 409 lease_lost POST "/api/v1/leases/$L_J3/heartbeat" -H "$A"
check '.error.message | test("withdrawn")' "a heartbeat after the withdrawal says so"
# a poll whose client has gone is never answered with a lease: a client that gives up after
# 1 s of a 20 s poll, then a job for its device; the daemon sees the closed connection
[ "$(poll "$AG1" 0)" = 200 ] || fail "h1 does not take job 3 again"
L_J3=$(body .lease_id)
expect 200 POST "/api/v1/leases/$L_J3/fail" -H "$A" -H "$JSON" \
    --data-binary '{"error": "done with job 3", "exit_code": 1}'
curl -s -m 1 -o /dev/null -X POST -H "$A" "$URL/api/v1/agents/$AG2/poll?wait=20" || true
job '{"key": "h2/cpu"}'
expect 201 POST /api/v1/jobs -H "$A" -H "$JSON" --data-binary @"$TMP/job.json"
J4=$(body .id)
sleep 1.5
expect 200 GET "/api/v1/jobs/$J4" -H "$V"
check '.tasks[0].state == "pending" and .tasks[0].attempts_used == 0' \
    "a long poll whose client left before a job came took nothing"
[ "$(sqlite3 "$DB" "SELECT count(*) FROM fleet_leases l JOIN fleet_tasks t ON t.id = l.task_id
    WHERE t.job_id = '$J4'")" = 0 ] || fail "a lease was handed to the poll of a client that left"
grep -q "poll of agent $AG2: its client has gone" "$SERVER_LOG" || fail "no log of the gone poll"
# a serve that stops gives its lease back: pending again, the attempt not counted
[ "$(poll "$AG2" 0)" = 200 ] || fail "h2 does not take job 4"
L_J4=$(body .lease_id)
expect 200 POST "/api/v1/leases/$L_J4/heartbeat" -H "$A"
expect 200 POST "/api/v1/leases/$L_J4/release" -H "$A"
check '.state == "pending"' "a lease given back"
expect 200 GET "/api/v1/jobs/$J4" -H "$V"
check '.tasks[0].state == "pending" and .tasks[0].attempts_used == 0' \
    "a released lease's task is pending, no attempt used"
expect_error 409 lease_lost POST "/api/v1/leases/$L_J4/done" -H "$A" -H "$JSON" \
    --data-binary "{\"run_id\": \"$RUN\"}"
# an admin removes a device: its open task ends, it leaves the list and every job
AG4=$(register h4 sm_99)
D4=$(jq -r '.devices[0].id' "$TMP/body")
job '{"key": ["h2/cpu", "h4/cpu"]}'
expect 201 POST /api/v1/jobs -H "$A" -H "$JSON" --data-binary @"$TMP/job.json"
J5=$(body .id)
ADMIN_TOKEN=$(token admin)
expect_error 403 forbidden DELETE "/api/v1/devices/$D4" -H "$A"
expect 200 DELETE "/api/v1/devices/$D4" -H "Authorization: Bearer $ADMIN_TOKEN"
check ".key == \"h4/cpu\" and .tasks_ended == 1" "DELETE /api/v1/devices/{id} ends its task"
expect_error 404 not_found DELETE "/api/v1/devices/$D4" -H "Authorization: Bearer $ADMIN_TOKEN"
expect 200 GET "/api/v1/jobs/$J5" -H "$V"
check '[.tasks[] | select(.device.key == "h4/cpu")][0] | .state == "never_answered" and
    (.error | test("was removed"))' "the removed device's task: never_answered, with why"
expect 200 GET /api/v1/agents -H "$V"
check '[.devices[].key] | index("h4/cpu") == null' "a removed device is not listed"
[ "$(poll "$AG4" 0)" = 204 ] || fail "a removed device was leased a task"
# h2's task of job 5 and job 4 end here, so that the counts below do not depend on them
for j in "$J4" "$J5"; do
    [ "$(poll "$AG2" 0)" = 200 ] || fail "h2 has no task of job $j"
    l=$(body .lease_id)
    expect 200 POST "/api/v1/leases/$l/done" -H "$A" -H "$JSON" --data-binary "{\"run_id\": \"$RUN\"}"
done

# ---- metrics ----
expect 200 GET /metrics -H "$V"
grep -q '^gpudiffd_fleet_devices_seen 3$' "$TMP/body" || fail "devices seen: $(grep fleet "$TMP/body")"
grep -q '^gpudiffd_fleet_tasks{state="failed"} 4$' "$TMP/body" ||
    fail "tasks failed: $(grep 'fleet_tasks{' "$TMP/body")"
grep -q '^gpudiffd_fleet_jobs_submitted_total 3$' "$TMP/body" || fail "jobs submitted since restart"
grep -q '^gpudiffd_fleet_leases_withdrawn_total [1-9]' "$TMP/body" || fail "no withdrawal counted"
grep -q '^gpudiffd_fleet_leases_released_total 1$' "$TMP/body" || fail "no release counted"
grep -q '^gpudiffd_fleet_polls_gone_total [1-9]' "$TMP/body" || fail "no gone poll counted"
echo "ok: /metrics counts devices, tasks and jobs"
echo "ok: server_jobs in $(($(date +%s) - t0)) s"
