#!/bin/sh
# deploy/demo.sh while another gpudiffd holds its port (a second checkout, a system
# service): the demo must notice that its own daemon did not start, say what holds the
# port and name GPUDIFF_DEMO_PORT, and upload nothing to the other daemon.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed

server_start
port=${URL##*:}
set +e
GPUDIFF_DEMO_DIR="$TMP/demo" GPUDIFF_DEMO_PORT="$port" "$GD_SRCDIR/deploy/demo.sh" \
    "$GD_BUILDDIR" "$GD_SHARED_DIR" >"$TMP/demo.out" 2>"$TMP/demo.err"
rc=$?
set -e
cat "$TMP/demo.err"
[ "$rc" = 1 ] || fail "the demo exited $rc with its port taken"
grep -q GPUDIFF_DEMO_PORT "$TMP/demo.err" || fail "the message does not name GPUDIFF_DEMO_PORT"
grep -q "port $port is held by" "$TMP/demo.err" || fail "the message does not say what holds it"
if command -v ss >/dev/null 2>&1; then
    grep -q "pid=$SERVER_PID" "$TMP/demo.err" || fail "ss is here, but the holder's pid is not named"
fi
grep -q "gpudiff-agent run" "$TMP/demo.out" && fail "agents ran against the other daemon"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM runs')" = 0 ] || fail "runs reached the other daemon"
if [ -f "$TMP/demo/gpudiffd.pid" ] && kill -0 "$(cat "$TMP/demo/gpudiffd.pid")" 2>/dev/null; then
    fail "the demo's daemon is still running"
fi
server_stop
echo "demo with its port taken: refused, holder named, nothing uploaded"
