#!/bin/sh
# The multi-host must-show of issue 15: a fleet across network namespaces made here. One
# namespace holds gpudiffd, listening on its bridge's address 10.77.0.1 of a private /24;
# three are agent hosts running `gpudiff-agent serve` (the CPU backend standing in for their
# GPUs, which their labels name: gpu=sm_75, sm_86, v100, recorded as labels); a fifth is the
# user's machine, which submits. Each is linked to the daemon's bridge by a veth pair and
# reaches nothing else. Plain HTTP to a non-loopback address is refused unless asked for
# (--insecure-http). A job submitted from the user's namespace runs on all three hosts and
# the matrix has the three devices; then a long job, during which one host's serve and its
# run are killed -9: after the lease runs out (lease_seconds 10) the job shows that device
# failed with the expiry's error, the other two finished. A trap tears down every
# namespace, link and process, also on failure. Skipped (77) only where namespaces cannot
# be made (not root, or a kernel or container that refuses them).
. ./tests/integration/env.sh
need_seed
need_numpy
"$PYTHON_NUMPY" -c 'import onnx' 2>/dev/null || skip "$PYTHON_NUMPY has no onnx module (python3-onnx)"
command -v ip >/dev/null || skip "ip (iproute2) is not installed"
command -v jq >/dev/null || skip "jq is not installed (deploy/setup.sh installs it)"
command -v curl >/dev/null || skip "curl is not installed (deploy/setup.sh installs it)"
[ "$(id -u)" = 0 ] || skip "network namespaces need root (ip netns add)"

P="gdj$$"
NS_D="$P-d"
NS_U="$P-u"
HOSTS="h1 h2 h3"
PIDS=""
DAEMON_PID=""
cleanup() {
    status=$?
    for p in $PIDS $DAEMON_PID; do kill -9 "$p" 2>/dev/null || true; done
    for p in $PIDS $DAEMON_PID; do wait "$p" 2>/dev/null || true; done
    if [ "$status" != 0 ] && [ "$status" != 77 ]; then
        for f in "$TMP"/*.log; do
            [ -f "$f" ] || continue
            echo "---- last lines of $f ----" >&2
            tail -n 15 "$f" >&2
        done
        status=1
    fi
    for n in "$NS_D" "$NS_U" "$P-h1" "$P-h2" "$P-h3"; do ip netns del "$n" 2>/dev/null || true; done
    rm -rf "$TMP"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
t0=$(date +%s)

ip netns add "$NS_D" 2>"$TMP/netns.err" ||
    skip "the kernel refuses network namespaces here: $(cat "$TMP/netns.err")"
ip -n "$NS_D" link set lo up
ip -n "$NS_D" link add br0 type bridge 2>"$TMP/br.err" ||
    skip "no bridge device in this kernel: $(cat "$TMP/br.err")"
ip -n "$NS_D" addr add 10.77.0.1/24 dev br0
ip -n "$NS_D" link set br0 up
i=10
for h in u $HOSTS; do # a veth pair from each namespace to the daemon's bridge
    i=$((i + 1))
    ns="$P-$h"
    [ "$h" = u ] || ip netns add "$ns"
    [ "$h" != u ] || ip netns add "$NS_U"
    ip link add "v-$h" netns "$NS_D" type veth peer name eth0 netns "$ns"
    ip -n "$NS_D" link set "v-$h" master br0 up
    ip -n "$ns" addr add "10.77.0.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
done
echo "ok: five namespaces linked by veth pairs to a bridge on 10.77.0.0/24"

# ---- the daemon, on its bridge address ----
DB="$TMP/gpudiff.db"
"$GD_BUILDDIR/gpudiffd" --help | grep -q -- --allow-root && ROOT=--allow-root || ROOT=""
export GPUDIFF_TOKEN
GPUDIFF_TOKEN=$("$GD_BUILDDIR/gpudiffd" token create --role agent --db "$DB" 2>/dev/null)
ip netns exec "$NS_D" "$GD_BUILDDIR/gpudiffd" --db "$DB" --listen 10.77.0.1:8470 $ROOT \
    2>"$TMP/gpudiffd.log" &
DAEMON_PID=$!
URL=http://10.77.0.1:8470
n=0
until ip netns exec "$NS_U" curl -sf "$URL/healthz" >/dev/null 2>&1; do
    n=$((n + 1)); [ "$n" -le 100 ] || fail "gpudiffd does not answer on $URL"
    kill -0 "$DAEMON_PID" 2>/dev/null || fail "gpudiffd exited at start"
    sleep 0.1
done
echo "ok: gpudiffd answers on $URL from the user's namespace, across the bridge"
# api NS METHOD PATH [curl options]: the body into $TMP/body, the status printed
api() {
    ns=$1 method=$2 path=$3
    shift 3
    ip netns exec "$ns" curl -sS -o "$TMP/body" -w '%{http_code}' -X "$method" \
        -H "Authorization: Bearer $GPUDIFF_TOKEN" "$@" "$URL$path"
}

# ---- three agent hosts ----
set +e
ip netns exec "$P-h1" "$AGENT" serve --server "$URL" --backend cpu --once \
    >/dev/null 2>"$TMP/refused.txt"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "plain HTTP to another host" "$TMP/refused.txt" ||
    fail "serve over plain HTTP to $URL without --insecure-http: exit $rc $(cat "$TMP/refused.txt")"
echo "ok: serve refuses plain HTTP to a non-loopback daemon unless --insecure-http is given"
serve() { # HOST GPU
    ip netns exec "$P-$1" "$AGENT" serve --server "$URL" --insecure-http --backend cpu \
        --host "$1" --label "gpu=$2" --cache "$TMP/cache-$1" --poll-wait 2 \
        2>"$TMP/serve-$1.log" &
    eval "PID_$1=$!"
    PIDS="$PIDS $!"
}
serve h1 sm_75
serve h2 sm_86
serve h3 v100
n=0
until [ "$(api "$NS_U" GET /api/v1/agents)" = 200 ] &&
    [ "$(jq '.devices | length' "$TMP/body")" = 3 ]; do
    n=$((n + 1)); [ "$n" -le 150 ] || fail "three agents did not register"
    sleep 0.1
done
jq -e '[.devices[] | "\(.key) \(.labels.gpu)"] | sort == ["h1/cpu sm_75", "h2/cpu sm_86",
    "h3/cpu v100"]' "$TMP/body" >/dev/null || fail "devices: $(cat "$TMP/body")"
echo "ok: three hosts registered h1/cpu, h2/cpu, h3/cpu with their gpu labels"

# ---- a job from the user's namespace runs on all three ----
"$PYTHON_NUMPY" "$GD_SRCDIR/tests/onnx/seed_to_onnx.py" "$SEED_MODEL" "$SEED_DIR/initializer" \
    "$TMP/lenet.onnx"
"$PYTHON_NUMPY" -c 'import numpy, sys
x = numpy.load(sys.argv[1])["inp"]
numpy.save(sys.argv[2], x)
numpy.save(sys.argv[3], numpy.tile(x, (10, 1, 1, 1)))' "$SEED_DIR/input.npz" "$TMP/input.npy" \
    "$TMP/big.npy"
ip netns exec "$NS_U" "$AGENT" submit --server "$URL" --insecure-http --model "$TMP/lenet.onnx" \
    --input "$TMP/input.npy" --name lenet-11-821 --lease-seconds 10 --wait --timeout 60 \
    >"$TMP/job1.txt" 2>"$TMP/submit1.log" || fail "submit --wait exited $?"
cat "$TMP/job1.txt"
[ "$(grep -c ' finished ' "$TMP/job1.txt")" = 3 ] || fail "the job did not finish on three hosts"
expect200() { [ "$1" = 200 ] || fail "status $1: $(head -c 600 "$TMP/body")"; }
expect200 "$(api "$NS_U" GET /api/v1/models/lenet-11-821/matrix)"
jq -e '(.devices | length) == 3 and ([.devices[].key | test("label.gpu=(sm_75|sm_86|v100)")]
    | all)' "$TMP/body" >/dev/null || fail "the matrix: $(head -c 900 "$TMP/body")"
echo "ok: the job ran on h1, h2 and h3; the matrix has the three devices"

# ---- a long job; h3's serve and its run are killed -9 mid-job ----
runs_before=$(grep -c 'running (lease' "$TMP/serve-h3.log")
ip netns exec "$NS_U" "$AGENT" submit --server "$URL" --insecure-http --model "$TMP/lenet.onnx" \
    --input "$TMP/big.npy" --name lenet-long --knob threads=1 --knob capture=fingerprint \
    --lease-seconds 10 --wait --timeout 75 >"$TMP/job2.txt" 2>"$TMP/submit2.log" &
SUBMIT_PID=$!
PIDS="$PIDS $SUBMIT_PID"
n=0
child=""
until [ -n "$child" ]; do # h3 has taken its task, and its run is going
    n=$((n + 1)); [ "$n" -le 300 ] || fail "h3 did not start the long job: $(cat "$TMP/serve-h3.log")"
    sleep 0.1
    [ "$(grep -c 'running (lease' "$TMP/serve-h3.log")" -gt "$runs_before" ] || continue
    child=$(ps -o pid= --ppid "$PID_h3" | tr -d ' ' | head -n 1)
done
kill -9 "$PID_h3" "$child"
killed_at=$(date +%s)
echo "ok: killed h3's serve (pid $PID_h3) and its run (pid $child) -9 mid-job"
set +e
wait "$SUBMIT_PID"
rc=$?
set -e
cat "$TMP/job2.txt"
[ "$rc" = 10 ] || fail "submit --wait of the long job exited $rc, not 10: $(cat "$TMP/submit2.log")"
JOB2=$(head -n 1 "$TMP/job2.txt")
expect200 "$(api "$NS_U" GET "/api/v1/jobs/$JOB2")"
jq -e '.counts.finished == 2 and .counts.failed == 1 and
    ([.tasks[] | select(.state == "finished") | .device.key] | sort) == ["h1/cpu", "h2/cpu"] and
    ([.tasks[] | select(.state == "failed") | .device.key]) == ["h3/cpu"]' "$TMP/body" \
    >/dev/null || fail "the long job: $(cat "$TMP/body")"
err=$(jq -r '.tasks[] | select(.device.key == "h3/cpu") | .error' "$TMP/body")
echo "$err" | grep -Eq '^lease expired: no heartbeat from h3/cpu for [0-9]+ s \(attempt 1 of 1\)$' ||
    fail "h3's error is not the expiry's: $err"
ended=$(date +%s)
echo "ok: h3 failed after $((ended - killed_at)) s: $err; h1 and h2 finished"
echo "ok: the whole test took $((ended - t0)) s"
# the ASan+UBSan build: a report from serve, submit or a child run fails the test
! grep -lE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$TMP"/*.log "$TMP"/*.err \
    2>/dev/null || fail "a sanitizer report in the logs above"
