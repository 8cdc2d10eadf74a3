#!/bin/sh
# Heavy work against gpudiffd (tests/integration/hostile_work.py): a 2 MB diff streamed
# from the cache; eight uncached diffs at once against a pool of one thread and a queue of
# two (503 queue_full, /healthz unaffected); the memory and time limits of a diff; and the
# durable compare queue: 149 comparisons queued, kill -9, a restart makes every one.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_numpy
AGENT_TOKEN=$(token agent)
ADMIN_TOKEN=$(token admin)
run() {
    PYTHONPATH="$GD_SRCDIR/tests/integration" "$PYTHON_NUMPY" \
        "$GD_SRCDIR/tests/integration/hostile_work.py" "$URL" "$DB" "$AGENT_TOKEN" \
        "$ADMIN_TOKEN" "$@" || fail "heavy work ($1) was not handled as it should be"
}
server_start
ids=$(run setup)
run stream $ids
server_stop
server_start --compare-threads 1 --compare-queue 2
run starve $ids
server_stop
server_start --diff-max-memory 16M
run big $ids
server_stop
server_start --diff-timeout-ms 100
run slow $ids
server_stop
server_start --compare-threads 1
run queue
server_kill9
left=$(sqlite3 "$DB" 'SELECT count(*) FROM compare_jobs')
server_start
run drained "$left"
server_stop
