#!/bin/sh
# A fleet across hosts made of network namespaces (issues 15 and 24): haproxy in front of two
# gpudiffd on one PostgreSQL database, four `gpudiff-agent serve` on three hosts, a user's
# machine that submits. Namespace lb holds a bridge on 10.79.0.0/24 and haproxy on
# 10.79.0.1:8470; d1 and d2 a daemon each (.2, .3); h1 two agents (labels gpu=sim_a and
# gpu=sim_b, the CPU backend standing in for two GPUs of one host), h2 one (sm_86), h3 one
# (v100); u the user (.20). Each reaches the bridge by a veth pair and nothing else;
# PostgreSQL listens on a Unix socket only (tests/integration/pg.sh), which the daemons'
# namespaces share through the file system. The daemons run with --device-stale-seconds 10
# and --lease-confirm-seconds 3, the jobs with lease_seconds 10; haproxy with abortonclose,
# as docs/DEPLOY.md has it.
#  1. Four devices, one per agent, h1's two told apart by their labels; each listed with its
#     agent and last heartbeat. A fifth serve, on h3, asking for h2's device id: refused
#     (exit 8, naming both hosts); h2 keeps it.
#  2. A job on all four: four runs, one per device, through either daemon.
#  3. A long job on all four. Mid-job: h3's agent and its run are killed -9, h2's agent gets
#     SIGTERM (it finishes and reports, then exits), and daemon d1 is killed -9 and started
#     again. The job ends (no --timeout: submit's own, from the job's deadline and lease)
#     with h1's two and h2 finished, h3 failed with the expiry's error.
#  4. h1's sim_b agent gets SIGTERM while its long poll waits; a job for sim_a and sim_b
#     right after: sim_a finishes; sim_b is never leased (no lease row, no attempt used) and
#     leaves the targets after the stale time, never_answered with why; submit's progress
#     named it while it waited.
# In every job no run is lost or made twice: the complete runs of each job are one per
# finished task, its run_id. The test fails on the code before issue 24 (h1's two agents
# were one device). A trap tears down every namespace and process, also on failure.
# Skipped (77) where namespaces cannot be made (not root, or a kernel or container that
# refuses them) or a tool is missing.
. ./tests/integration/env.sh
need_seed
need_numpy
"$PYTHON_NUMPY" -c 'import onnx' 2>/dev/null || skip "$PYTHON_NUMPY has no onnx module (python3-onnx)"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
command -v jq >/dev/null || skip "jq is not installed (deploy/setup.sh installs it)"
command -v curl >/dev/null || skip "curl is not installed (deploy/setup.sh installs it)"
command -v haproxy >/dev/null || skip "haproxy is not installed (deploy/setup.sh installs it)"
[ "$(id -u)" = 0 ] || skip "network namespaces need root (ip netns add)"
. "$GD_SRCDIR/tests/integration/pg.sh"
pg_need
GPUDIFFD=${GPUDIFFD:-"$GD_BUILDDIR/gpudiffd"}

P="gdf$$"
NAMESPACES="lb d1 d2 h1 h2 h3 u"
PIDS=""
cleanup() {
    status=$?
    set +e
    for p in $PIDS; do kill -9 "$p" 2>/dev/null; done
    for p in $PIDS; do wait "$p" 2>/dev/null; done
    if [ "$status" != 0 ] && [ "$status" != 77 ]; then
        for f in "$TMP"/*.log "$TMP"/*.err; do
            [ -f "$f" ] || continue
            echo "---- last lines of $f ----" >&2
            tail -n 12 "$f" >&2
        done
        status=1
    fi
    for n in $NAMESPACES; do ip netns del "$P-$n" 2>/dev/null; done
    pg_cleanup
    rm -rf "$TMP"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
t0=$(date +%s)
in_ns() { ns=$1; shift; ip netns exec "$P-$ns" "$@"; }

# ---- the network: a bridge in lb, a veth pair from every other namespace ----
ip netns add "$P-lb" 2>"$TMP/netns.err" ||
    skip "the kernel refuses network namespaces here: $(cat "$TMP/netns.err")"
ip -n "$P-lb" link set lo up
ip -n "$P-lb" link add br0 type bridge 2>"$TMP/br.err" ||
    skip "no bridge device in this kernel: $(cat "$TMP/br.err")"
ip -n "$P-lb" addr add 10.79.0.1/24 dev br0
ip -n "$P-lb" link set br0 up
for pair in d1:2 d2:3 h1:11 h2:12 h3:13 u:20; do
    n=${pair%:*}
    ip netns add "$P-$n"
    ip link add "v-$n" netns "$P-lb" type veth peer name eth0 netns "$P-$n"
    ip -n "$P-lb" link set "v-$n" master br0 up
    ip -n "$P-$n" addr add "10.79.0.${pair#*:}/24" dev eth0
    ip -n "$P-$n" link set eth0 up
    ip -n "$P-$n" link set lo up
done
echo "ok: seven namespaces on a bridge of 10.79.0.0/24"

# ---- PostgreSQL, two daemons, haproxy ----
pg_start >/dev/null
DB=$(pg_createdb fleet)
"$GPUDIFFD" migrate --db "$DB" >/dev/null 2>&1
export GPUDIFF_TOKEN
GPUDIFF_TOKEN=$("$GPUDIFFD" token create --role agent --db "$DB" 2>/dev/null)
sql() { psql -X -q -tA -v ON_ERROR_STOP=1 -d "$DB" -c "$1"; }
# Issue 24's settings, when this gpudiffd has them (the code before it is run as it is).
FLEET_FLAGS=""
"$GPUDIFFD" --help 2>&1 | grep -q -- --device-stale-seconds &&
    FLEET_FLAGS="--device-stale-seconds 10 --lease-confirm-seconds 3"
daemon() { # NAME ADDRESS
    # `ip netns exec` itself, not a function, in the background: $! is then the daemon
    ip netns exec "$P-$1" "$GPUDIFFD" --db "$DB" --listen "$2:8470" --allow-root \
        --spill-dir "$TMP" $FLEET_FLAGS 2>>"$TMP/gpudiffd-$1.log" &
    PIDS="$PIDS $!"
    eval "PID_$1=$!"
    n=0
    until in_ns "$1" curl -sf "http://$2:8470/healthz" >/dev/null 2>&1; do
        n=$((n + 1)); [ "$n" -le 150 ] || fail "gpudiffd $1 does not answer on $2"
        sleep 0.1
    done
}
daemon d1 10.79.0.2
daemon d2 10.79.0.3
cat >"$TMP/haproxy.cfg" <<EOF
global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 90s
    timeout server 90s
    retries 3
    option redispatch
    # a client that goes (an agent stopped in its long poll) closes the daemon's side too,
    # so the daemon sees it (docs/DEPLOY.md); without, its lease offer is withdrawn unconfirmed
    option abortonclose
frontend gpudiff
    bind 10.79.0.1:8470
    default_backend daemons
backend daemons
    balance roundrobin
    option httpchk GET /healthz
    server d1 10.79.0.2:8470 check inter 300 fall 1 rise 2
    server d2 10.79.0.3:8470 check inter 300 fall 1 rise 2
EOF
ip netns exec "$P-lb" haproxy -f "$TMP/haproxy.cfg" -db >"$TMP/haproxy.log" 2>&1 &
PIDS="$PIDS $!"
URL=http://10.79.0.1:8470
n=0
until in_ns u curl -sf "$URL/healthz" >/dev/null 2>&1; do
    n=$((n + 1)); [ "$n" -le 100 ] || fail "haproxy does not answer on $URL"
    sleep 0.1
done
echo "ok: haproxy on $URL in front of gpudiffd d1 and d2 on $(sql 'SELECT version()' | cut -d' ' -f1,2)"
api() { # METHOD PATH [curl options]: the body into $TMP/body, the status printed
    m=$1 path=$2
    shift 2
    in_ns u curl -sS -o "$TMP/body" -w '%{http_code}' -X "$m" \
        -H "Authorization: Bearer $GPUDIFF_TOKEN" "$@" "$URL$path"
}
expect200() { [ "$1" = 200 ] || fail "status $1: $(head -c 600 "$TMP/body")"; }

# ---- 1: four agents on three hosts; a device id that is taken ----
serve() { # NAME HOST GPU [serve flags]
    name=$1 host=$2 gpu=$3
    shift 3
    ip netns exec "$P-$host" "$AGENT" serve --server "$URL" --insecure-http --backend cpu \
        --host "$host" --label "gpu=$gpu" --cache "$TMP/cache-$name" --poll-wait 3 "$@" \
        2>>"$TMP/serve-$name.log" &
    PIDS="$PIDS $!"
    eval "PID_$name=$!"
}
serve a h1 sim_a
serve b h1 sim_b
serve c h2 sm_86
serve d h3 v100
n=0
until [ "$(api GET /api/v1/agents)" = 200 ] && [ "$(jq '.devices | length' "$TMP/body")" = 4 ]; do
    n=$((n + 1))
    [ "$n" -le 200 ] || fail "four agents did not register four devices: $(cat "$TMP/body")"
    sleep 0.1
done
KEY_A="h1/cpu label.gpu=sim_a" KEY_B="h1/cpu label.gpu=sim_b"
KEY_C="h2/cpu label.gpu=sm_86" KEY_D="h3/cpu label.gpu=v100"
jq -e --arg a "$KEY_A" --arg b "$KEY_B" --arg c "$KEY_C" --arg d "$KEY_D" \
    '([.devices[].key] | sort) == ([$a, $b, $c, $d] | sort) and
    ([.devices[] | "\(.agent.host) \(.labels.gpu)"] | sort) ==
    ["h1 sim_a", "h1 sim_b", "h2 sm_86", "h3 v100"] and
    ([.devices[] | .last_seen, .agent.last_seen, .agent.id | strings] | length) == 12' \
    "$TMP/body" >/dev/null || fail "devices: $(cat "$TMP/body")"
echo "ok: four agents on three hosts are four devices, h1's two told apart by their labels"
set +e
in_ns h3 "$AGENT" serve --server "$URL" --insecure-http --backend cpu --host h3 \
    --device-id "$KEY_C" --cache "$TMP/cache-thief" --poll-wait 3 >/dev/null 2>"$TMP/thief.err"
rc=$?
set -e
[ "$rc" = 8 ] && grep -q "is held by h2 (serve .*not h3 (serve" "$TMP/thief.err" ||
    fail "a serve on h3 asking for h2's device id exited $rc: $(cat "$TMP/thief.err")"
expect200 "$(api GET /api/v1/agents)"
jq -e --arg c "$KEY_C" '[.devices[] | select(.key == $c) | .agent.host] == ["h2"] and
    (.devices | length) == 4' "$TMP/body" >/dev/null || fail "h2's device: $(cat "$TMP/body")"
echo "ok: a serve on h3 asking for h2's device id was refused: $(grep -m1 'held by' "$TMP/thief.err" |
    sed 's/.*conflict: //')"

# runs_of JOB: "complete runs, distinct devices" of the job's runs
runs_of() {
    sql "SELECT count(*) || ' ' || count(DISTINCT device) FROM runs WHERE state = 'complete'
        AND CAST(meta AS json)->'job'->>'id' = '$1'"
}
# once_each JOB N: N complete runs of N devices, and each finished task's run is one of them
once_each() {
    [ "$(runs_of "$1")" = "$2 $2" ] || fail "job $1: runs $(runs_of "$1"), expected $2 of $2 devices"
    expect200 "$(api GET "/api/v1/jobs/$1")"
    jq -r '.tasks[] | select(.state == "finished") | .run_id' "$TMP/body" | sort >"$TMP/task_runs"
    sql "SELECT id FROM runs WHERE state = 'complete' AND CAST(meta AS json)->'job'->>'id' = '$1'" |
        sort >"$TMP/job_runs"
    cmp -s "$TMP/task_runs" "$TMP/job_runs" || fail "job $1: task runs and the job's runs differ"
}

# ---- 2: a job on all four ----
"$PYTHON_NUMPY" "$GD_SRCDIR/tests/onnx/seed_to_onnx.py" "$SEED_MODEL" "$SEED_DIR/initializer" \
    "$TMP/lenet.onnx"
"$PYTHON_NUMPY" -c 'import numpy, sys
x = numpy.load(sys.argv[1])["inp"]
numpy.save(sys.argv[2], x)
numpy.save(sys.argv[3], numpy.tile(x, (10, 1, 1, 1)))' "$SEED_DIR/input.npz" "$TMP/input.npy" \
    "$TMP/big.npy"
timeout 120 ip netns exec "$P-u" "$AGENT" submit --server "$URL" --insecure-http \
    --model "$TMP/lenet.onnx" --input "$TMP/input.npy" --name lenet-11-821 --lease-seconds 10 \
    --wait --timeout 100 >"$TMP/job1.txt" 2>"$TMP/submit1.err" || fail "submit --wait exited $?"
J1=$(head -n 1 "$TMP/job1.txt")
[ "$(grep -c ' finished ' "$TMP/job1.txt")" = 4 ] || fail "job 1 did not finish on four devices"
once_each "$J1" 4
expect200 "$(api GET /api/v1/models/lenet-11-821/matrix)"
jq -e '(.devices | length) == 4' "$TMP/body" >/dev/null || fail "the matrix: $(head -c 900 "$TMP/body")"
echo "ok: a job on all four: four runs, one per device; the matrix has four devices"

# ---- 3: a long job; kill -9 of h3's agent, SIGTERM of h2's, d1 killed and started again ----
for x in a b c d; do eval "runs_$x=\$(grep -c 'running (lease' \"\$TMP/serve-$x.log\" || true)"; done
timeout 240 ip netns exec "$P-u" "$AGENT" submit --server "$URL" --insecure-http \
    --model "$TMP/lenet.onnx" --input "$TMP/big.npy" --name lenet-long --knob threads=1 \
    --knob capture=fingerprint --lease-seconds 10 --wait >"$TMP/job2.txt" 2>"$TMP/submit2.err" &
SUBMIT_PID=$!
PIDS="$PIDS $SUBMIT_PID"
n=0
for x in a b c d; do # every agent has taken its task and its run is going
    eval "before=\$runs_$x"
    until [ "$(grep -c 'running (lease' "$TMP/serve-$x.log" || true)" -gt "$before" ]; do
        n=$((n + 1)); [ "$n" -le 600 ] || fail "agent $x did not start the long job"
        sleep 0.1
    done
done
child=$(ps -o pid= --ppid "$PID_d" | tr -d ' ' | head -n 1)
[ -n "$child" ] || fail "no run of h3's agent to kill"
kill -9 "$PID_d" "$child"
kill -TERM "$PID_c"
kill -9 "$PID_d1"
wait "$PID_d1" 2>/dev/null || true
killed_at=$(date +%s)
echo "ok: mid-job: h3's agent and its run killed -9, h2's agent sent SIGTERM, daemon d1 killed -9"
sleep 1
daemon d1 10.79.0.2
echo "ok: daemon d1 started again"
wait "$PID_c" || fail "h2's agent exited $? after SIGTERM mid-job"
grep -q "reported done" "$TMP/serve-c.log" || fail "h2's agent did not finish its job at SIGTERM"
set +e
wait "$SUBMIT_PID"
rc=$?
set -e
[ "$rc" = 10 ] || fail "submit --wait of the long job exited $rc, not 10: $(cat "$TMP/submit2.err")"
grep -q "waiting at most [0-9]* s (the job's deadline and one lease" "$TMP/submit2.err" ||
    fail "submit named no default timeout: $(cat "$TMP/submit2.err")"
J2=$(head -n 1 "$TMP/job2.txt")
expect200 "$(api GET "/api/v1/jobs/$J2")"
jq -e --arg a "$KEY_A" --arg b "$KEY_B" --arg c "$KEY_C" --arg d "$KEY_D" \
    '.counts.finished == 3 and .counts.failed == 1 and
    ([.tasks[] | select(.state == "finished") | .device.key] | sort) == ([$a, $b, $c] | sort) and
    ([.tasks[] | select(.state == "failed") | .device.key]) == [$d]' "$TMP/body" >/dev/null ||
    fail "the long job: $(cat "$TMP/body")"
err=$(jq -r --arg d "$KEY_D" '.tasks[] | select(.device.key == $d) | .error' "$TMP/body")
echo "$err" | grep -Eq "^lease expired: no heartbeat from $KEY_D for [0-9]+ s \(attempt 1 of 1\)$" ||
    fail "h3's error is not the expiry's: $err"
once_each "$J2" 3
echo "ok: the long job ended $(($(date +%s) - killed_at)) s after the kills: h1's two and h2" \
    "finished (h2 at its SIGTERM), h3 failed: $err"

# ---- 4: an agent stopped while its long poll waits gets no lease ----
sleep 1 # sim_b's agent is in a long poll again
kill -TERM "$PID_b"
wait "$PID_b" || fail "h1's sim_b agent exited $? at SIGTERM"
start=$(date +%s)
set +e
timeout 120 ip netns exec "$P-u" "$AGENT" submit --server "$URL" --insecure-http \
    --model "$TMP/lenet.onnx" --input "$TMP/input.npy" --name lenet-11-821 \
    --match labels.gpu=sim_a,sim_b --lease-seconds 10 --wait >"$TMP/job3.txt" 2>"$TMP/submit3.err"
rc=$?
set -e
took=$(($(date +%s) - start))
[ "$rc" = 10 ] || fail "submit --wait of job 3 exited $rc, not 10: $(cat "$TMP/submit3.err")"
J3=$(head -n 1 "$TMP/job3.txt")
expect200 "$(api GET "/api/v1/jobs/$J3")"
jq -e --arg a "$KEY_A" --arg b "$KEY_B" '(.tasks | length) == 2 and
    ([.tasks[] | select(.device.key == $a) | .state] == ["finished"]) and
    ([.tasks[] | select(.device.key == $b) | .state, .attempts_used] == ["never_answered", 0])' \
    "$TMP/body" >/dev/null || fail "job 3: $(cat "$TMP/body")"
err=$(jq -r --arg b "$KEY_B" '.tasks[] | select(.device.key == $b) | .error' "$TMP/body")
echo "$err" | grep -q "was not seen for [0-9]* s (device-stale-seconds 10): it left the job's targets" ||
    fail "sim_b's task: $err"
[ "$(sql "SELECT count(*) FROM fleet_leases l JOIN fleet_tasks t ON t.id = l.task_id
    JOIN fleet_devices d ON d.id = t.device_id WHERE t.job_id = '$J3'
    AND d.key = '$KEY_B'")" = 0 ] || fail "a lease of job 3 went to the stopped agent"
grep -q "waiting on $KEY_B (pending)" "$TMP/submit3.err" ||
    fail "submit's progress did not name the device it waited on: $(cat "$TMP/submit3.err")"
once_each "$J3" 1
echo "ok: the agent stopped in its long poll got no lease; its task left after $took s: $err"

echo "ok: the whole test took $(($(date +%s) - t0)) s"
# the ASan+UBSan build: a report from a daemon, serve, submit or a child run fails the test
! grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$TMP"/*.log "$TMP"/*.err \
    2>/dev/null || fail "a sanitizer report in the logs above"
