#!/bin/sh
# bench_replay.sh: the time of `gpudiff-agent replay` against the plain `run` of the same
# model on the same backend, the two interleaved (docs/PERFORMANCE.md, "Replay").
#
#   tests/bench/bench_replay.sh BUILD_DIR SHARED_DIR [MODEL INPUT KEY WEIGHTS_DIR] [-- KNOBS...]
#
# MODEL defaults to the seed case (tests/fixtures/models/lenet-11-821.json with
# SHARED_DIR/cases/lenet-11-821); BACKEND, REPEATS and OUT come from the environment
# (default cpu, 5, a temporary folder). Both commands capture every layer into a bundle. The
# source the replay reads is a cpu64 run of the same model and input, made once (or the
# bundle SOURCE names, from the environment). Prints, for
# each, the median of run.json's duration_us (the session's run: every node, its inputs'
# upload, the capture) and of the wall time of the whole command (loading the model and the
# bundle, writing the new one), then replay / run.
set -eu
[ $# -ge 2 ] || { sed -n '2,12p' "$0"; exit 2; }
BUILD=$1
SHARED=$2
shift 2
SRC=$(cd "$(dirname "$0")/../.." && pwd)
MODEL=$SRC/tests/fixtures/models/lenet-11-821.json
INPUT=$SHARED/cases/lenet-11-821/input.npz
KEY=inp
WEIGHTS=$SHARED/cases/lenet-11-821/initializer
if [ $# -ge 4 ] && [ "$1" != "--" ]; then
    MODEL=$1 INPUT=$2 KEY=$3 WEIGHTS=$4
    shift 4
fi
[ "${1:-}" = "--" ] && shift
BACKEND=${BACKEND:-cpu}
REPEATS=${REPEATS:-5}
AGENT=$BUILD/gpudiff-agent
WORK=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/bench_replay.XXXXXX")}
mkdir -p "$WORK"
keyopt=""
[ -n "$KEY" ] && keyopt="--input-key $KEY"

now_ms() { date +%s%3N; }
duration() { sed -n 's/.*"duration_us": *\([0-9.e+]*\).*/\1/p' "$1/run.json" | head -n 1; }

SOURCE=${SOURCE:-$WORK/source}
# shellcheck disable=SC2086
[ -f "$SOURCE/run.json" ] || "$AGENT" run --model "$MODEL" --weights-dir "$WEIGHTS" \
    --input "$INPUT" $keyopt --backend cpu64 --out "$SOURCE" --replace >/dev/null
: >"$WORK/times.txt"
i=0
while [ "$i" -lt "$REPEATS" ]; do
    t0=$(now_ms)
    # shellcheck disable=SC2086
    "$AGENT" run --model "$MODEL" --weights-dir "$WEIGHTS" --input "$INPUT" $keyopt \
        --backend "$BACKEND" "$@" --out "$WORK/run" --replace >/dev/null
    t1=$(now_ms)
    # shellcheck disable=SC2086
    "$AGENT" replay "$SOURCE" --model "$MODEL" --weights-dir "$WEIGHTS" --input "$INPUT" \
        $keyopt --backend "$BACKEND" "$@" --out "$WORK/replay" --replace >/dev/null
    t2=$(now_ms)
    echo "run $(duration "$WORK/run") $((t1 - t0))" >>"$WORK/times.txt"
    echo "replay $(duration "$WORK/replay") $((t2 - t1))" >>"$WORK/times.txt"
    i=$((i + 1))
done
median() { grep "^$1 " "$WORK/times.txt" | awk -v c="$2" '{print $c}' | sort -g |
    awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
rs=$(median run 2) rw=$(median run 3) ps=$(median replay 2) pw=$(median replay 3)
echo "model $(basename "$MODEL"), backend $BACKEND $*, $REPEATS interleaved repeats (medians)"
awk -v rs="$rs" -v rw="$rw" -v ps="$ps" -v pw="$pw" 'BEGIN {
    printf "run     session %9.1f ms  command %8.0f ms\n", rs / 1e3, rw
    printf "replay  session %9.1f ms  command %8.0f ms\n", ps / 1e3, pw
    printf "replay / run: session %.2fx, command %.2fx (target at most 1.5x)\n", ps / rs, pw / rw
}'
[ -n "${OUT:-}" ] || rm -rf "$WORK"
