#!/bin/sh
# Hostile requests to gpudiffd (tests/integration/hostile_requests.py): request smuggling
# shapes, bad framing, NUL and control bytes, lenient numbers, oversized or ambiguous
# run.json documents, and the errors a plain HTTP library answers in its own words. Each
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
server_start --web-root "$TMP/web"
PYTHONPATH="$GD_SRCDIR/tests/integration" "$PYTHON_NUMPY" \
    "$GD_SRCDIR/tests/integration/hostile_requests.py" "$URL" "$DB" "$AGENT_TOKEN" \
    "$ADMIN_TOKEN" || fail "hostile requests were not all refused as they should be"
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
