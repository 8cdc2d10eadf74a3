#!/bin/sh
# gpudiffd backup --to FILE and restore --from FILE (issue 15), on SQLite and on PostgreSQL
# (a cluster of the test's own, tests/integration/pg.sh). On each: 8 runs are pushed and a
# backup is taken once two are finished (online), then restored into a new database, on
# which a daemon serves it: every run the copy holds as complete has all its layers, each layer
# downloads byte for byte as pushed, no blob is orphaned and the database checks clean
# (integrity_check, pg_amcheck); a second backup taken after the pushes restores all 8
# runs. A file that is not a backup is refused with a clear message, and the database it
# was to replace is unchanged; backup refuses to overwrite a file.
. ./tests/integration/env.sh
need_numpy
GD_TEST_DB=""
. "$GD_SRCDIR/tests/integration/pg.sh"
. "$GD_SRCDIR/tests/integration/server.sh"
SERVER_EXIT_HOOK=pg_cleanup

"$PYTHON_NUMPY" - "$TMP/dumps" <<'PY'
import os, sys
import numpy as np
rng = np.random.default_rng(1516)
for r in range(8):
    d = "%s/%d" % (sys.argv[1], r)
    os.makedirs(d)
    for i in range(4):
        np.save("%s/layer%d.npy" % (d, i), rng.standard_normal((512, 512), dtype=np.float32))
PY
for r in $(seq 0 7); do
    "$AGENT" bundle --from "$TMP/dumps/$r" --out "$TMP/run$r" --model backup --backend import \
        >/dev/null
done

# check_copy DB N: a daemon on DB serves at least N complete runs, each whole and exact.
check_copy() {
    DB=$1
    case "$DB" in postgresql:*) GD_TEST_DB=$DB ;; *) GD_TEST_DB="" ;; esac
    [ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "the restored copy is damaged"
    orphans=$(sqlite3 "$DB" "SELECT count(*) FROM blobs WHERE sha256 NOT IN
        (SELECT blob_sha256 FROM layers WHERE blob_sha256 IS NOT NULL)")
    [ "$orphans" = 0 ] || fail "$orphans orphaned blobs in the copy"
    server_start
    expect 200 GET "/api/v1/runs?limit=100"
    jq -r '.runs[].id' "$TMP/body" >"$TMP/ids"
    [ "$(wc -l <"$TMP/ids")" -ge "$2" ] || fail "the copy holds $(wc -l <"$TMP/ids") runs, not $2"
    for r in $(seq 0 7); do
        id=$(jq -r .id "$TMP/run$r/run.json")
        grep -qx "$id" "$TMP/ids" || continue
        for i in 0 1 2 3; do
            expect 200 GET "/api/v1/runs/$id/layers/$i.npy"
            cmp -s "$TMP/body" "$TMP/run$r/$(jq -r ".layers[$i].file" "$TMP/run$r/run.json")" ||
                fail "run $r layer $i differs in the copy"
        done
    done
    server_stop
    echo "ok: the copy holds $(wc -l <"$TMP/ids") complete runs, each whole and exact"
}

# one_backend NAME SOURCE FRESH1 FRESH2: the test on SOURCE, restoring into FRESH1, FRESH2.
one_backend() {
    DB=$2
    case "$DB" in postgresql:*) GD_TEST_DB=$DB ;; *) GD_TEST_DB="" ;; esac
    "$GPUDIFFD" migrate --db "$DB" >/dev/null
    GPUDIFF_TOKEN=$(token agent)
    export GPUDIFF_TOKEN
    server_start
    pushes=""
    for r in $(seq 0 7); do
        "$AGENT" push "$TMP/run$r" --server "$URL" >/dev/null 2>"$TMP/push$r.err" &
        pushes="$pushes $!"
    done
    # Online: while the pushes go on, once two runs are finished.
    tries=0
    until [ "$(grep -c ' finished$' "$SERVER_LOG" || true)" -ge 2 ]; do
        tries=$((tries + 1))
        [ "$tries" -le 3000 ] || fail "no two runs finished within 60 s"
        sleep 0.02
    done
    at_backup=$(grep -c ' finished$' "$SERVER_LOG" || true)
    "$GPUDIFFD" backup --db "$DB" --to "$TMP/$1.during" 2>"$TMP/backup.err" ||
        fail "backup during the pushes: $(cat "$TMP/backup.err")"
    for p in $pushes; do
        wait "$p" || fail "a push failed: $(cat "$TMP"/push*.err)"
    done
    "$GPUDIFFD" backup --db "$DB" --to "$TMP/$1.after" 2>"$TMP/backup.err" ||
        fail "backup after the pushes: $(cat "$TMP/backup.err")"
    expect_exit 2 "$GPUDIFFD" backup --db "$DB" --to "$TMP/$1.after"
    server_stop
    "$GPUDIFFD" restore --db "$3" --from "$TMP/$1.during" 2>"$TMP/restore.err" ||
        fail "restore: $(cat "$TMP/restore.err")"
    grep -q 'restored from' "$TMP/restore.err" || fail "restore said: $(cat "$TMP/restore.err")"
    echo "the backup began with $at_backup of 8 runs finished"
    check_copy "$3" 2
    "$GPUDIFFD" restore --db "$4" --from "$TMP/$1.after" 2>"$TMP/restore.err" ||
        fail "restore: $(cat "$TMP/restore.err")"
    check_copy "$4" 8
    # Not a backup: refused, and the database is as it was.
    head -c 65536 /dev/urandom >"$TMP/junk"
    DB=$4
    case "$DB" in postgresql:*) GD_TEST_DB=$DB ;; *) GD_TEST_DB="" ;; esac
    before=$(sqlite3 "$DB" 'SELECT count(*) FROM runs')
    expect_exit 1 "$GPUDIFFD" restore --db "$DB" --from "$TMP/junk"
    [ "$(sqlite3 "$DB" 'SELECT count(*) FROM runs')" = "$before" ] ||
        fail "a refused restore changed the database"
    echo "ok: $1: online backup, restore, a refused restore"
}

one_backend sqlite "$TMP/src.db" "$TMP/copy1.db" "$TMP/copy2.db"
if [ -x "$PG_BIN/initdb" ] && command -v psql >/dev/null &&
    "$GPUDIFFD" --help 2>&1 | grep -q postgresql; then
    pg_start
    one_backend postgresql "$(pg_createdb src)" "$(pg_createdb copy1)" "$(pg_createdb copy2)"
    pg_stop
else
    echo "SKIP (part): PostgreSQL 15 or libpq is missing; the SQLite part passed"
fi
