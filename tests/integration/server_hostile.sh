#!/bin/sh
# Hostile requests to gpudiffd (tests/integration/hostile_requests.py): request smuggling
# shapes, bad framing, NUL and control bytes, lenient numbers, oversized or ambiguous
# run.json documents, and the errors a plain HTTP library answers in its own words. Each
# must get its status and the JSON error, leave the database and its WAL byte for byte as
# they were, and leave the daemon answering.
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
server_stop
