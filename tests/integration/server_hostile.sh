#!/bin/sh
# Hostile requests to gpudiffd (tests/integration/hostile_requests.py, 300 kinds or more):
# request smuggling shapes, bad framing, NUL and control bytes, lenient numbers, oversized
# or ambiguous run.json documents, the errors a plain HTTP library answers in its own
# words, and issue 25's tables (every route under the methods, tokens, body types it
# refuses; Host values; path and query forms; another agent's changes to owned runs).
# On PostgreSQL too (server_pg.sh): the database's rows are compared instead of its files. Each
# must get its status and the JSON error, leave the database and its WAL byte for byte as
# they were, and leave the daemon answering. Then: the database is 0600, and as root the
# daemon refuses to serve without --allow-root.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_numpy

mkdir "$TMP/web"
printf '<!doctype html><title>gpudiff</title>\n' > "$TMP/web/index.html"
AGENT_TOKEN=$(token agent)
ADMIN_TOKEN=$(token admin)
OTHER_TOKEN=$(token agent)
server_start --web-root "$TMP/web"
PYTHONPATH="$GD_SRCDIR/tests/integration" "$PYTHON_NUMPY" \
    "$GD_SRCDIR/tests/integration/hostile_requests.py" "$URL" "$DB" "$AGENT_TOKEN" \
    "$ADMIN_TOKEN" "$OTHER_TOKEN" >"$TMP/hostile.txt" || {
    grep -v '^ok: ' "$TMP/hostile.txt"
    fail "hostile requests were not all refused as they should be"
}
tail -n 1 "$TMP/hostile.txt"
kinds=$(sed -n 's/^hostile requests: \([0-9]*\) kinds.*/\1/p' "$TMP/hostile.txt")
[ "${kinds:-0}" -ge 300 ] || fail "only ${kinds:-0} kinds of hostile requests"
if [ -n "${GD_TEST_DB:-}" ]; then
    echo "ok: on PostgreSQL; the file modes and the root check below are SQLite's and the host's"
    exit 0
fi
# The database holds token hashes and every tensor: nobody else may read it (it was 0644).
for f in "$DB" "$DB-wal" "$DB-shm"; do
    [ -e "$f" ] || fail "$f is not there while the daemon runs"
    [ "$(stat -c %a "$f")" = 600 ] || fail "$f is mode $(stat -c %a "$f")"
done
echo "ok: the database, its WAL and its shared-memory file are 0600"
server_stop
# As root, serving needs --allow-root (it served without a word).
if [ "$(id -u)" = 0 ]; then
    set +e
    "$GPUDIFFD" --db "$DB" --listen 127.0.0.1:0 2>"$TMP/root.log"
    rc=$?
    set -e
    [ "$rc" = 2 ] && grep -q -- "--allow-root" "$TMP/root.log" ||
        fail "gpudiffd served as root without --allow-root (exit $rc)"
    echo "ok: as root, gpudiffd refuses to serve without --allow-root"
fi
