#!/bin/sh
# bench_latency.sh BUILD [SECONDS] [ROUNDS]: gpudiffd's own latency under load (issue 24;
# docs/PERFORMANCE.md, "Latency under 64 uploaders"). Runs BUILD's bench_load (64 clients
# pushing runs of 8 layers, a baseline set so every run queues a comparison; probes of
# /healthz every 10 ms, a cached diff every 20 ms, an uncached one every 0.1 s) for SECONDS
# (default 30), ROUNDS times (default 3) on each database in alternating order: a fresh
# SQLite file, and a fresh database of a PostgreSQL 15 cluster of its own
# (tests/integration/pg.sh: a Unix socket, fsync on). The daemon runs on CPU 0 and the load
# on CPU 1 (`bench_load --daemon-cpus 0 --load-cpus 1`, sched_setaffinity as taskset), and
# PostgreSQL's processes on CPU 0 with the daemon, so the latencies are the daemon's, not the
# clients' turn for a CPU. Prints each round's probe lines and the medians. GPUDIFFD=PATH runs
# another daemon binary (an older build) with this BUILD's bench_load. Needs 2 CPUs or more.
set -eu
BUILD=$(cd "${1:?usage: bench_latency.sh BUILD [SECONDS] [ROUNDS]}" && pwd)
SECONDS_EACH=${2:-30}
ROUNDS=${3:-3}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
GD_BUILDDIR=$BUILD
GPUDIFFD=${GPUDIFFD:-"$BUILD/gpudiffd"}
skip() { echo "bench_latency: cannot run: $*" >&2; exit 77; }
fail() { echo "bench_latency: $*" >&2; exit 1; }
[ "$(nproc)" -ge 2 ] || skip "one CPU: the daemon and the load cannot run apart"
command -v taskset >/dev/null || skip "taskset (util-linux) is not installed"
[ -x "$BUILD/tests/bench/bench_load" ] || fail "make -C $BUILD tests/bench/bench_load first"
. "$SRC/tests/integration/pg.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/gpudiff-bench-latency.XXXXXX")
trap 'pg_cleanup; rm -rf "$TMP"' EXIT
pg_start >&2
# PostgreSQL beside the daemon: the postmaster and its processes now, and so its backends to come
pm=$(head -n 1 "$PG_DIR/data/postmaster.pid")
for p in $pm $(pgrep -P "$pm"); do taskset -pc 0 "$p" >/dev/null; done

: >"$TMP/results"
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="sqlite postgresql"; else order="postgresql sqlite"; fi
    for be in $order; do
        db=""
        [ "$be" = sqlite ] || db="--db=$(pg_createdb "round$r")"
        "$BUILD/tests/bench/bench_load" --gpudiffd "$GPUDIFFD" --seconds "$SECONDS_EACH" \
            --daemon-cpus 0 --load-cpus 1 $db >"$TMP/out.txt" 2>&1 ||
            { cat "$TMP/out.txt" >&2; fail "bench_load on $be failed"; }
        p99() { sed -n "s/^$1 .* p99 *\([0-9.]*\) ms.*/\1/p" "$TMP/out.txt"; }
        runs=$(sed -n 's/^load: .*(\([0-9.]*\) runs\/s).*/\1/p' "$TMP/out.txt")
        echo "$be $runs $(p99 healthz) $(p99 'cached diff') $(p99 'uncached diff (200 layers)')" \
            >>"$TMP/results"
        echo "round $r $be (load average $(cut -d' ' -f1 /proc/loadavg)):"
        grep -E '^(load:|healthz|cached diff|uncached|comparisons|cpu:)' "$TMP/out.txt" |
            sed 's/^/  /'
    done
done
pg_stop

median() { # median of column $2 for backend $1
    awk -v be="$1" -v c="$2" '$1 == be { print $c }' "$TMP/results" | sort -g |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
echo "medians of $ROUNDS rounds of $SECONDS_EACH s (daemon on CPU 0, load on CPU 1):"
for col in 2:runs/s 3:healthz_p99_ms 4:cached_diff_p99_ms 5:uncached_diff_p99_ms; do
    c=${col%%:*}
    printf '  %-22s sqlite %9s  postgresql %9s\n' "${col#*:}" "$(median sqlite "$c")" \
        "$(median postgresql "$c")"
done
