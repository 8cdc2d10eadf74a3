#!/bin/sh
# Two gpudiffd on one PostgreSQL database behind haproxy (issue 15): the daemons keep no
# state of their own, so either may take any request.
# 1. 32 `gpudiff-agent push` at once through the balancer, every run with one layer all the
#    runs share (so both daemons ingest the same blob at the same time) and three of its
#    own: every push exits 0, both daemons took PUTs, every run is complete with all its
#    layers, the blobs table holds each distinct tensor once (1 + 32 * 3 rows) and no blob
#    belongs to no layer, pg_amcheck finds nothing wrong.
# 2. kill -9 of one daemon while 8 pushes of 8 larger layers are in flight through the
#    balancer: at once, every layer either daemon had acknowledged (its log shows 200/201
#    for the PUT) is stored in the database; the agents retry through the balancer onto the
#    daemon left and all complete; every layer downloaded is, after its .npy header, byte
#    for byte the bundle's file; blobs are distinct and none is orphaned.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/pg.sh"
need_numpy
command -v haproxy >/dev/null || skip "haproxy is not installed (deploy/setup.sh installs it)"
pg_need
GD_TEST_DB=pending
. "$GD_SRCDIR/tests/integration/server.sh"

PIDS=""
fleet_cleanup() {
    st=$?
    # Under set -e, `(exit "$st")` below would end the trap before server_cleanup ran.
    set +e
    for p in $PIDS; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in $PIDS; do
        wait "$p" 2>/dev/null || true
    done
    pg_cleanup
    (exit "$st")
    server_cleanup
}
trap fleet_cleanup EXIT

free_port() {
    /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# daemon NAME: starts a gpudiffd on $DB on a free port; sets PID_NAME and PORT_NAME.
daemon() {
    log="$TMP/gpudiffd.$1.log"
    root_flag=""
    [ "$(id -u)" = 0 ] && root_flag=--allow-root
    "$GPUDIFFD" --db "$DB" --listen 127.0.0.1:0 --spill-dir "$TMP" --log-level info \
        $root_flag 2>"$log" &
    pid=$!
    PIDS="$PIDS $pid"
    port=""
    tries=0
    while [ -z "$port" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 100 ] || fail "gpudiffd $1 did not start: $(tail -n 5 "$log")"
        kill -0 "$pid" 2>/dev/null || fail "gpudiffd $1 exited at start: $(tail -n 5 "$log")"
        sleep 0.1
        port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$log")
    done
    eval "PID_$1=$pid PORT_$1=$port"
}

pg_start
DB=$(pg_createdb fleet)
"$GPUDIFFD" migrate --db "$DB" >/dev/null
GPUDIFF_TOKEN=$(token agent)
export GPUDIFF_TOKEN
daemon a
daemon b
grep -q "database: PostgreSQL database fleet" "$TMP/gpudiffd.a.log" ||
    fail "daemon a does not report its database: $(grep database "$TMP/gpudiffd.a.log")"

LB_PORT=$(free_port)
cat >"$TMP/haproxy.cfg" <<EOF
global
    maxconn 512
defaults
    mode http
    timeout connect 2s
    timeout client 120s
    timeout server 120s
    retries 2
    option redispatch
frontend gpudiff
    bind 127.0.0.1:$LB_PORT
    default_backend daemons
backend daemons
    balance roundrobin
    option httpchk GET /healthz
    server a 127.0.0.1:$PORT_a check inter 200 fall 1 rise 2
    server b 127.0.0.1:$PORT_b check inter 200 fall 1 rise 2
EOF
haproxy -f "$TMP/haproxy.cfg" -db >"$TMP/haproxy.log" 2>&1 &
PIDS="$PIDS $!"
URL="http://127.0.0.1:$LB_PORT"
tries=0
until curl -sf "$URL/healthz" >/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -le 100 ] || fail "haproxy does not answer: $(cat "$TMP/haproxy.log")"
    sleep 0.1
done

# ---- 1: 32 pushes at once ----
"$PYTHON_NUMPY" - "$TMP/dumps" 32 4 256 <<'PY'
import os, sys
import numpy as np
out, runs, layers, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(15)
shared = rng.standard_normal((side, side), dtype=np.float32)
for r in range(runs):
    d = "%s/%d" % (out, r)
    os.makedirs(d)
    np.save("%s/layer0.npy" % d, shared)
    for i in range(1, layers):
        np.save("%s/layer%d.npy" % (d, i), rng.standard_normal((side, side), dtype=np.float32))
PY
for r in $(seq 0 31); do
    "$AGENT" bundle --from "$TMP/dumps/$r" --out "$TMP/run$r" --model fleet-32 \
        --backend import >/dev/null
done
start=$(date +%s.%N)
pushes=""
for r in $(seq 0 31); do
    "$AGENT" push "$TMP/run$r" --server "$URL" --retries 5 >"$TMP/push$r.out" \
        2>"$TMP/push$r.err" &
    pushes="$pushes $!"
done
r=0
for p in $pushes; do
    wait "$p" || fail "push $r exited $?: $(tail -n 3 "$TMP/push$r.err")"
    r=$((r + 1))
done
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
! grep -l 'retry' "$TMP"/push*.err || fail "a push had to retry: $(grep -h retry "$TMP"/push*.err | head -3)"
! grep -h ' [45][0-9][0-9] [0-9]* bytes' "$TMP"/gpudiffd.[ab].log | head -5 | grep . ||
    fail "an error answer during the 32 pushes"
for d in a b; do
    n=$(grep -c 'PUT /api/v1/runs/.*/layers/[0-9]* 20[01]' "$TMP/gpudiffd.$d.log" || true)
    [ "$n" -gt 0 ] || fail "daemon $d took no upload: the balancer sent all to one"
    echo "daemon $d stored $n layers"
done
[ "$(sqlite3 "$DB" "SELECT count(*) FROM runs r JOIN models m ON m.id = r.model_id
    WHERE m.name = 'fleet-32' AND r.state = 'complete'")" = 32 ] || fail "not 32 complete runs"
[ "$(sqlite3 "$DB" "SELECT count(*) FROM layers l JOIN runs r ON r.id = l.run_id
    JOIN models m ON m.id = r.model_id WHERE m.name = 'fleet-32'
    AND l.uploaded_at IS NOT NULL")" = 128 ] || fail "not 128 layers stored"
blobs=$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')
[ "$blobs" = 97 ] || fail "$blobs blobs, expected 97 (1 shared + 32 * 3)"
[ "$(sqlite3 "$DB" 'SELECT count(DISTINCT sha256) FROM blobs')" = 97 ] || fail "duplicate blobs"
[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "pg_amcheck after 32 pushes"
echo "ok: 32 concurrent pushes through haproxy onto 2 daemons: 32 runs, 128 layers, 97 blobs (${secs} s)"

# ---- 2: kill -9 of daemon a mid-upload ----
"$PYTHON_NUMPY" - "$TMP/big" 8 8 1024 <<'PY'
import os, sys
import numpy as np
out, runs, layers, side = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(1515)
for r in range(runs):
    d = "%s/%d" % (out, r)
    os.makedirs(d)
    for i in range(layers):
        np.save("%s/layer%d.npy" % (d, i), rng.standard_normal((side, side), dtype=np.float32))
PY
for r in $(seq 0 7); do
    "$AGENT" bundle --from "$TMP/big/$r" --out "$TMP/kill$r" --model fleet-kill \
        --backend import >/dev/null
    rm -rf "$TMP/big/$r"
done
before_a=$(grep -c 'PUT /api/v1/runs/.*/layers/[0-9]* 20[01]' "$TMP/gpudiffd.a.log" || true)
pushes=""
for r in $(seq 0 7); do
    "$AGENT" push "$TMP/kill$r" --server "$URL" --retries 30 --retry-time 120 \
        >"$TMP/kpush$r.out" 2>"$TMP/kpush$r.err" &
    pushes="$pushes $!"
done
tries=0
while [ "$(grep -c 'PUT /api/v1/runs/.*/layers/[0-9]* 20[01]' "$TMP/gpudiffd.a.log" || true)" -le \
        "$((before_a + 2))" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 3000 ] || fail "daemon a stored no layer of the second phase within 60 s"
    sleep 0.02
done
kill -KILL "$PID_a"
wait "$PID_a" 2>/dev/null || true
# What either daemon acknowledged up to now (b goes on: its later answers count as well,
# since they are checked after).
sleep 0.2
grep -ho 'PUT /api/v1/runs/[0-9a-f-]*/layers/[0-9]* 20[01]' "$TMP/gpudiffd.a.log" \
    "$TMP/gpudiffd.b.log" | sed 's|PUT /api/v1/runs/\([^/]*\)/layers/\([0-9]*\) .*|\1 \2|' |
    sort -u >"$TMP/acked"
sqlite3 "$DB" "SELECT run_id || ' ' || idx FROM layers WHERE uploaded_at IS NOT NULL" |
    sort -u >"$TMP/stored"
lost=$(comm -23 "$TMP/acked" "$TMP/stored" | wc -l)
[ "$lost" = 0 ] || fail "$lost acknowledged layers are not stored: $(comm -23 "$TMP/acked" "$TMP/stored" | head -3)"
echo "ok: after kill -9 of daemon a, all $(wc -l <"$TMP/acked") acknowledged layers are stored"
r=0
for p in $pushes; do
    wait "$p" || fail "push $r did not complete after the kill (exit $?): $(tail -n 3 "$TMP/kpush$r.err")"
    r=$((r + 1))
done
retried=$(grep -l 'retry' "$TMP"/kpush*.err | wc -l)
echo "the 8 pushes completed; $retried of them retried"
[ "$retried" -ge 1 ] || fail "no push had to retry: the kill hit nothing in flight"
[ "$(sqlite3 "$DB" "SELECT count(*) FROM runs r JOIN models m ON m.id = r.model_id
    WHERE m.name = 'fleet-kill' AND r.state = 'complete'")" = 8 ] || fail "not 8 complete runs"
blobs=$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')
[ "$blobs" = $((97 + 64)) ] || fail "$blobs blobs, expected 161"
orphans=$(sqlite3 "$DB" "SELECT count(*) FROM blobs WHERE sha256 NOT IN
    (SELECT blob_sha256 FROM layers WHERE blob_sha256 IS NOT NULL)")
[ "$orphans" = 0 ] || fail "$orphans blobs belong to no layer"
[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "pg_amcheck after the kill"
for r in 0 7; do
    id=$(jq -r .id "$TMP/kill$r/run.json")
    jq -r '.layers[] | "\(.index) \(.file)"' "$TMP/kill$r/run.json" >"$TMP/files"
    while read -r index file; do
        expect 200 GET "/api/v1/runs/$id/layers/$index.npy"
        "$PYTHON_NUMPY" -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
sys.exit(0 if a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes() else 1)' \
            "$TMP/body" "$TMP/kill$r/$file" || fail "run $r layer $index differs"
    done <"$TMP/files"
done
echo "ok: 8 runs complete after kill -9, 161 distinct blobs, none orphaned, downloads exact"
