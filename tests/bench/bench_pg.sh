#!/bin/sh
# bench_pg.sh BUILD [ROUNDS]: gpudiffd on PostgreSQL against gpudiffd on SQLite, the same
# data in the same run (docs/PERFORMANCE.md, "PostgreSQL against SQLite"). Starts a
# PostgreSQL 15 cluster of its own (tests/integration/pg.sh: a temporary folder, a Unix
# socket), then for each of ROUNDS rounds (default 3), in alternating order, a fresh
# daemon of BUILD on a fresh database of each backend, against which it runs
#   bench_ingest --server --rounds 1   (an agent pushing 32 layers of 8 MiB: 256 MiB), and
#   bench_diff_latency --server        (32 clients reading a cached diff for 5 s).
# Prints each round's figures and the medians with the PostgreSQL / SQLite ratios.
# Needs `make bench` in BUILD.
set -eu
BUILD=$(cd "${1:?usage: bench_pg.sh BUILD [ROUNDS]}" && pwd)
ROUNDS=${2:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
GD_BUILDDIR=$BUILD
skip() { echo "bench_pg: cannot run: $*" >&2; exit 77; }
fail() { echo "bench_pg: $*" >&2; exit 1; }
. "$SRC/tests/integration/pg.sh"
[ -x "$BUILD/tests/bench/bench_ingest" ] && [ -x "$BUILD/tests/bench/bench_diff_latency" ] ||
    fail "run make bench in $BUILD first"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpudiff-bench-pg.XXXXXX")
DAEMON=""
cleanup() {
    [ -z "$DAEMON" ] || { kill -TERM "$DAEMON" 2>/dev/null; wait "$DAEMON" 2>/dev/null || true; }
    pg_cleanup
    rm -rf "$TMP"
}
trap cleanup EXIT
pg_start >&2

# daemon DB: starts gpudiffd on DB, sets URL and TOKEN.
daemon() {
    "$BUILD/gpudiffd" migrate --db "$1" >/dev/null 2>&1
    TOKEN=$("$BUILD/gpudiffd" token create --role agent --db "$1" 2>/dev/null)
    root=""
    [ "$(id -u)" != 0 ] || root=--allow-root
    "$BUILD/gpudiffd" --db "$1" --listen 127.0.0.1:0 --spill-dir "$TMP" $root \
        2>"$TMP/daemon.log" &
    DAEMON=$!
    port=""
    while [ -z "$port" ]; do
        kill -0 "$DAEMON" 2>/dev/null || fail "gpudiffd exited: $(tail -n 3 "$TMP/daemon.log")"
        sleep 0.1
        port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/daemon.log")
    done
    URL="http://127.0.0.1:$port"
}
stop() {
    kill -TERM "$DAEMON"
    wait "$DAEMON" || true
    DAEMON=""
}

: >"$TMP/results"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="sqlite postgresql"; else order="postgresql sqlite"; fi
    for be in $order; do
        if [ "$be" = sqlite ]; then db="$TMP/round$r.db"; else db=$(pg_createdb "round$r"); fi
        daemon "$db"
        mkdir "$TMP/ingest" # bench_ingest removes it when done
        sync
        "$BUILD/tests/bench/bench_ingest" --server "$URL" --token "$TOKEN" --rounds 1 \
            --layers 32 --layer-mb 8 --dir "$TMP/ingest" >"$TMP/ingest.txt" 2>&1 ||
            fail "bench_ingest on $be: $(tail -n 3 "$TMP/ingest.txt")"
        push=$(sed -n 's/^push: *\([0-9.]*\) MB\/s.*/\1/p' "$TMP/ingest.txt")
        "$BUILD/tests/bench/bench_diff_latency" --server "$URL" --token "$TOKEN" --seconds 5 \
            >"$TMP/diff.txt" 2>&1 || fail "bench_diff_latency on $be: $(tail -n 3 "$TMP/diff.txt")"
        first=$(sed -n 's/.*computed and cached in \([0-9.]*\) ms.*/\1/p' "$TMP/diff.txt")
        rps=$(sed -n 's/.*requests, \([0-9]*\) requests\/s.*/\1/p' "$TMP/diff.txt")
        p99=$(sed -n 's/^latency: .*p99 \([0-9.]*\) ms.*/\1/p' "$TMP/diff.txt")
        stop
        echo "$be $push $first $rps $p99" >>"$TMP/results"
        printf 'round %d %-10s push %6s MB/s | diff: first %6s ms, %5s req/s, p99 %6s ms (load %s)\n' \
            "$r" "$be" "$push" "$first" "$rps" "$p99" "$(cut -d' ' -f1 /proc/loadavg)"
    done
done
pg_stop

median() { # median of column $2 for backend $1
    awk -v be="$1" -v c="$2" '$1 == be { print $c }' "$TMP/results" | sort -g |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "medians of $ROUNDS rounds:"
for col in 2:push_MB/s 3:first_diff_ms 4:diff_req/s 5:diff_p99_ms; do
    c=${col%%:*}
    s=$(median sqlite "$c")
    p=$(median postgresql "$c")
    awk -v n="${col#*:}" -v s="$s" -v p="$p" \
        'BEGIN { printf "  %-14s sqlite %9s  postgresql %9s  postgresql/sqlite %.2f\n", n, s, p, p / s }'
done
