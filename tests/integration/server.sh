# tests/integration/server.sh: what the gpudiffd integration scripts share, sourced after
# env.sh: a daemon on 127.0.0.1 on a free port with a fresh SQLite file in $TMP (stopped on
# exit, its log shown when the script fails), tokens, curl helpers, the seed case bundle.

# GPUDIFFD may name another binary (an older build, to show what a test caught).
GPUDIFFD=${GPUDIFFD:-"$GD_BUILDDIR/gpudiffd"}
DB="$TMP/gpudiff.db"
SERVER_PID=""
SERVER_LOG=""
URL=""
server_starts=0

command -v curl >/dev/null || skip "curl is not installed (deploy/setup.sh installs it)"
command -v sqlite3 >/dev/null || skip "the sqlite3 shell is not installed (deploy/setup.sh)"
command -v jq >/dev/null || skip "jq is not installed (deploy/setup.sh installs it)"

# server_sanitized: 1 when no daemon log of this script holds a sanitizer's report. In the
# ASan+UBSan build (make check of --enable-asan --enable-ubsan) every daemon a script starts
# is sanitized: a finding aborts it or, for a leak, makes it exit non-zero at SIGTERM, and
# its report lands in its log; this makes any of them fail the script, whatever came after.
server_sanitized() {
    bad=0
    for log in "$TMP"/gpudiffd.*.log; do
        [ -f "$log" ] || continue
        if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$log"; then
            echo "FAIL: a sanitizer report in $log:" >&2
            grep -E -A12 "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$log" |
                head -n 40 >&2
            bad=1
        fi
    done
    return "$bad"
}

server_cleanup() {
    status=$?
    # A test's own clean-up (agents, a PostgreSQL cluster) goes in SERVER_EXIT_HOOK, run
    # here after the status is taken: a trap of "other; server_cleanup" would hand this
    # function the status of `other`, and a failed test would exit 0.
    set +e
    if [ -n "${SERVER_EXIT_HOOK:-}" ]; then
        eval "$SERVER_EXIT_HOOK"
    fi
    if [ -n "$SERVER_PID" ]; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    if [ "$status" != 77 ] && ! server_sanitized; then
        status=1
    fi
    if [ "$status" != 0 ] && [ "$status" != 77 ] && [ -n "$SERVER_LOG" ]; then
        echo "---- last lines of $SERVER_LOG ----" >&2
        tail -n 40 "$SERVER_LOG" >&2 || true
    fi
    rm -rf "$TMP"
    exit "$status"
}
trap server_cleanup EXIT

# server_launch SCHEME [gpudiffd flags...]: starts the daemon on $DB and waits for its
# "listening on SCHEME://127.0.0.1:PORT/" line; sets SERVER_PID, SERVER_LOG and port.
server_launch() {
    scheme=$1
    shift
    server_starts=$((server_starts + 1))
    SERVER_LOG="$TMP/gpudiffd.$server_starts.log"
    # CI runs as root, which gpudiffd refuses without --allow-root (a $GPUDIFFD older than
    # the flag serves as root without it).
    root_flag=""
    if [ "$(id -u)" = 0 ] && "$GPUDIFFD" --help | grep -q -- --allow-root; then
        root_flag=--allow-root
    fi
    "$GPUDIFFD" --db "$DB" --listen 127.0.0.1:0 --log-level debug $root_flag "$@" \
        2>"$SERVER_LOG" &
    SERVER_PID=$!
    port=""
    tries=0
    while [ -z "$port" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 100 ] || fail "gpudiffd did not start"
        kill -0 "$SERVER_PID" 2>/dev/null || fail "gpudiffd exited at start"
        sleep 0.1
        port=$(sed -n "s|.*listening on $scheme://127\\.0\\.0\\.1:\\([0-9]*\\)/.*|\\1|p" \
            "$SERVER_LOG")
    done
}

# server_start [gpudiffd flags...]: starts the daemon on $DB and waits until /healthz answers.
server_start() {
    server_launch http "$@"
    URL="http://127.0.0.1:$port"
    curl -sf "$URL/healthz" >/dev/null || fail "gpudiffd does not answer /healthz"
}

server_stop() {
    kill -TERM "$SERVER_PID"
    wait "$SERVER_PID" || fail "gpudiffd exited with $? on SIGTERM"
    SERVER_PID=""
}

server_kill9() {
    kill -KILL "$SERVER_PID"
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

# token ROLE: makes a token of ROLE in $DB and prints it.
token() {
    "$GPUDIFFD" token create --role "$1" --db "$DB" 2>/dev/null
}

# api METHOD PATH [curl options...]: the answer's body goes to $TMP/body; prints the status.
api() {
    method=$1
    path=$2
    shift 2
    curl -sS -o "$TMP/body" -w '%{http_code}' -X "$method" "$@" "$URL$path"
}

# expect STATUS METHOD PATH [curl options...]: the status must be STATUS.
expect() {
    want=$1
    shift
    got=$(api "$@") || fail "curl failed: $*"
    [ "$got" = "$want" ] || fail "$1 $2: status $got, expected $want: $(head -c 600 "$TMP/body")"
}

# expect_error STATUS CODE METHOD PATH [curl options...]: a JSON error with that code.
expect_error() {
    want_code=$2
    want_status=$1
    shift 2
    expect "$want_status" "$@"
    jq -e --arg c "$want_code" '.error.code == $c and (.error.message | length > 0)' \
        "$TMP/body" >/dev/null || fail "$1 $2: not the error $want_code: $(head -c 600 "$TMP/body")"
    echo "ok: $1 $2 -> $want_status $want_code: $(jq -r .error.message "$TMP/body")"
}

# seed_bundle DIR: runs the seed case on the cpu backend into DIR.
seed_bundle() {
    "$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$SEED_DIR/input.npz" --input-key inp --backend cpu --out "$1" >/dev/null
}

# upload_bundle DIR TOKEN: POST run.json, PUT every layer, finish; all must succeed.
upload_bundle() {
    dir=$1
    tok=$2
    id=$(jq -r .id "$dir/run.json")
    st=$(api POST /api/v1/runs -H "Authorization: Bearer $tok" \
        -H 'Content-Type: application/json' --data-binary @"$dir/run.json")
    case "$st" in 200|201) ;; *) fail "POST run $id: $st $(head -c 600 "$TMP/body")" ;; esac
    jq -r '.layers[] | "\(.index) \(.file)"' "$dir/run.json" > "$TMP/layers.txt"
    while read -r index file; do
        st=$(api PUT "/api/v1/runs/$id/layers/$index" -H "Authorization: Bearer $tok" \
            -T "$dir/$file")
        case "$st" in 200|201) ;; *) fail "PUT layer $index: $st $(cat "$TMP/body")" ;; esac
    done < "$TMP/layers.txt"
    expect 200 POST "/api/v1/runs/$id/finish" -H "Authorization: Bearer $tok"
}

# db_dump: the database's content as SQL, for before/after comparisons.
db_dump() {
    sqlite3 "$DB" .dump
}

# ---- fleet (issue 15): the same scripts against PostgreSQL ----
# With GD_TEST_DB set to a PostgreSQL URI (tests/integration/server_pg.sh sets it, one fresh
# database per script), the daemon runs on it and the scripts' `sqlite3 "$DB" SQL` lines
# run through psql on it instead: the SQL they use reads the same in both. SQLite's PRAGMA
# integrity_check becomes pg_amcheck of every table and index (heap and B-tree checks);
# foreign_key_check has nothing to report, since PostgreSQL checks every foreign key at each
# write; a .dump is pg_dump's (plain, no owners, no comments).
if [ -n "${GD_TEST_DB+set}" ]; then
    [ -z "$GD_TEST_DB" ] || DB=$GD_TEST_DB
    sqlite3() {
        case "${1:-}" in
        postgresql:*) ;;
        *)
            command sqlite3 "$@"
            return
            ;;
        esac
        pgdb=$1
        shift
        case "${1:-}" in
        "PRAGMA integrity_check")
            "${PG_BIN:-/usr/lib/postgresql/15/bin}/pg_amcheck" --install-missing --heapallindexed \
                "$pgdb" >"$TMP/amcheck.txt" 2>&1 || { cat "$TMP/amcheck.txt" >&2; echo damaged; return 0; }
            echo ok
            ;;
        "PRAGMA foreign_key_check") ;;
        .dump)
            "${PG_BIN:-/usr/lib/postgresql/15/bin}/pg_dump" --no-owner --no-privileges \
                --no-comments "$pgdb" | grep -v -e '^--' -e '^.restrict ' -e '^.unrestrict '
            ;;
        "")
            psql -X -q -tA -v ON_ERROR_STOP=1 -d "$pgdb" -f -
            ;;
        *)
            printf '%s\n' "$1" | psql -X -q -tA -v ON_ERROR_STOP=1 -d "$pgdb" -f -
            ;;
        esac
    }
fi
