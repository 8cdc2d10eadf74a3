#!/bin/sh
# The gpudiffd integration suite against PostgreSQL (issue 15): starts Debian's postgresql 15
# on a temporary cluster (tests/integration/pg.sh), then runs each server script with
# GD_TEST_DB set to a fresh database of it (thirteen scripts), so its daemons use `--db
# postgresql://...` and its checks of the database run through psql
# (tests/integration/server.sh; server_hostile.sh compares every table's rows before and
# after each hostile request, tests/integration/hostile.py). Every script must pass as it
# does on SQLite. Left out: server_hostile_work.sh and server_list.sh, which read the
# database through Python's sqlite3 module or check SQLite itself (query plans), and
# server_hostile_conn.sh, whose load is the front door's, not the store's.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/pg.sh"
trap 'pg_cleanup; rm -rf "$TMP"' EXIT

SCRIPTS=${GD_PG_SCRIPTS:-"server_upload.sh server_bad_input.sh server_crash.sh server_e2e.sh
    server_crash_agent.sh server_web_api.sh server_sweep.sh server_fingerprints.sh
    server_jobs.sh server_diff_text.sh server_owner.sh server_diff_cache.sh server_hostile.sh"}

pg_start
n=0
failed=""
for s in $SCRIPTS; do
    n=$((n + 1))
    uri=$(pg_createdb "suite$n")
    start=$(date +%s)
    set +e
    GD_TEST_DB=$uri sh "$GD_SRCDIR/tests/integration/$s" >"$TMP/$s.log" 2>&1
    rc=$?
    set -e
    secs=$(($(date +%s) - start))
    case $rc in
    0) echo "PASS: $s on PostgreSQL (${secs} s)" ;;
    77) echo "SKIP: $s on PostgreSQL: $(grep -m1 SKIP "$TMP/$s.log")" ;;
    *)
        echo "FAIL: $s on PostgreSQL (exit $rc): $(grep -m1 '^FAIL' "$TMP/$s.log")"
        grep -v '^20[0-9-]*T.* info ' "$TMP/$s.log" | tail -n 25
        failed="$failed $s"
        ;;
    esac
done
pg_stop
[ -z "$failed" ] || fail "on PostgreSQL:$failed"
echo "ok: $n server scripts pass on PostgreSQL"
