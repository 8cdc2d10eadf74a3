#!/bin/sh
# tests/bench/bench_sweep.sh: what `gpudiff-agent sweep` costs beyond the runs it makes. It
# sweeps the seed case with the default grid of a backend RUNS times and prints, per sweep,
# the process's wall time and the sweep's own accounting (its document's "timing"): the
# time inside the engine (sessions, timed and captured runs, less the capture callback),
# inside the comparisons (gd_diff_runs), the capture callback (layers copied into memory or
# compared bit for bit with the first capture), and the rest (loading, grid, document,
# report): the overhead, also as a share of the sweep; then the medians.
# usage: tests/bench/bench_sweep.sh BUILD_DIR SHARED_DIR [RUNS] [BACKEND] [extra sweep flags]
set -eu
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
runs=${3:-3}
backend=${4:-cpu}
shift $(( $# < 4 ? $# : 4 ))
top=$(cd "$(dirname "$0")/../.." && pwd)
py=${PYTHON:-/usr/bin/python3}
seed="$shared/cases/lenet-11-821"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-sweep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
i=1
while [ "$i" -le "$runs" ]; do
    t0=$(date +%s.%N)
    "$build/gpudiff-agent" sweep --backend "$backend" --model "$top/tests/fixtures/models/lenet-11-821.json" \
        --weights-dir "$seed/initializer" --input "$seed/input.npz" --input-key inp --json --quiet \
        "$@" >"$tmp/sweep-$i.json"
    t1=$(date +%s.%N)
    echo "$t0 $t1" >"$tmp/wall-$i.txt"
    i=$((i + 1))
done
"$py" - "$tmp" "$runs" <<'PY'
import json, statistics, sys
tmp, runs = sys.argv[1], int(sys.argv[2])
rows = []
for i in range(1, runs + 1):
    t = json.load(open("%s/sweep-%d.json" % (tmp, i)))["timing"]
    t0, t1 = map(float, open("%s/wall-%d.txt" % (tmp, i)).read().split())
    t["process_s"] = t1 - t0
    t["overhead_less_capture"] = (t["overhead_s"] - t["capture_handling_s"]) / t["total_s"]
    rows.append(t)
    print("sweep %d: process %.2f s, sweep %.2f s: engine %.2f s, comparisons %.2f s, capture "
          "callback %.2f s, overhead %.3f s = %.2f%% (%.2f%% without the capture callback)" % (
              i, t["process_s"], t["total_s"], t["engine_s"], t["compare_s"],
              t["capture_handling_s"], t["overhead_s"], 100 * t["overhead_fraction"],
              100 * t["overhead_less_capture"]))
med = lambda k: statistics.median(r[k] for r in rows)
print("median of %d: process %.2f s, sweep %.2f s, overhead %.2f%% of the sweep (%.2f%% without "
      "the capture callback), process beyond the sweep's own clock %.3f s" % (
          runs, med("process_s"), med("total_s"), 100 * med("overhead_fraction"),
          100 * med("overhead_less_capture"), med("process_s") - med("total_s")))
PY
