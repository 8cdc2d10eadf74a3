#!/bin/sh
# tests/bench/web_depth.sh: the diff view at LLM depth, timed in Chromium (docs/PERFORMANCE.md,
# "The dashboard at LLM depth and fleet width"): the encoder of tests/web/make_fleet.py at
# PAIRS Gemm+Tanh pairs (2 x PAIRS layers) run on cpu and cpu --emulate tf32, pushed to a
# fresh gpudiffd, the diff and its view made once through the API (timed), then
# tests/bench/web_depth.mjs on this tree's web/ and, beside it on the same database, on the
# dashboard of a git revision (PEER_REV, by default 2638b4a: main before issue 26, the
# revision the issue measured; main itself has issue 26 since its merge).
#
#   tests/bench/web_depth.sh BUILD PAIRS [ROUNDS] [PEER_REV]
#   tests/bench/web_depth.sh build 1000 3 2638b4a   # the 2,000-layer model
#   tests/bench/web_depth.sh build 5000 1 2638b4a   # the 10,000-layer model (minutes)
#
# Needs /usr/bin/python3 with numpy, Chromium, tests/web/node_modules. The daemons take
# --max-json 64M: a run.json of 10,000 layers is 17 MB, over the default 16M.
set -eu
build=$(cd "${1:?usage: web_depth.sh BUILD PAIRS [ROUNDS] [PEER_REV]}" && pwd)
pairs=${2:?pairs}
rounds=${3:-3}
rev=${4:-2638b4a}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/web-depth.XXXXXX)
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT INT TERM
/usr/bin/python3 "$src/tests/web/make_fleet.py" --encoder "$pairs" "$tmp/gen"
m=$tmp/gen/encoder
t0=$(date +%s)
"$build/gpudiff-agent" run --model "$m/model.json" --input "$m/input.npy" --out "$tmp/a" --threads 1 >/dev/null &
"$build/gpudiff-agent" run --model "$m/model.json" --input "$m/input.npy" --out "$tmp/b" --threads 1 \
    --emulate tf32 >/dev/null &
wait
echo "runs: $(($(date +%s) - t0)) s"
port=$((20000 + $$ % 20000))
mkdir "$tmp/peer"
git -C "$src" archive "$rev" web | tar -x -C "$tmp/peer"
echo "this tree: $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD -- web || echo ' (web/ changed)'); peer: $rev at $(git -C "$src" rev-parse --short "$rev")"
"$build/gpudiffd" migrate --db "$tmp/db" >/dev/null 2>&1
token=$("$build/gpudiffd" token create --role agent --db "$tmp/db" 2>/dev/null)
"$build/gpudiffd" --allow-root --db "$tmp/db" --web-root "$src/web" --listen "127.0.0.1:$port" \
    --max-json 64M --log-level warn 2>"$tmp/d1.log" &
pids="$pids $!"
"$build/gpudiffd" --allow-root --db "$tmp/db" --web-root "$tmp/peer/web" --listen "127.0.0.1:$((port + 1))" \
    --max-json 64M --log-level warn 2>"$tmp/d2.log" &
pids="$pids $!"
sleep 2
t0=$(date +%s)
for r in a b; do
    GPUDIFF_TOKEN=$token "$build/gpudiff-agent" push "$tmp/$r" --server "http://127.0.0.1:$port" >/dev/null 2>&1
done
echo "push: $(($(date +%s) - t0)) s"
A=$(jq -r .id "$tmp/a/run.json")
B=$(jq -r .id "$tmp/b/run.json")
u="http://127.0.0.1:$port/api/v1"
curl -sf -o /dev/null -w "the diff, computed: %{time_total} s\n" "$u/diff?a=$A&b=$B"
curl -sf -o "$tmp/full" "$u/diff?a=$A&b=$B"
curl -sf -o "$tmp/sum" -w "its view, made: %{time_total} s, " "$u/diff/summary?a=$A&b=$B"
echo "summary $(wc -c <"$tmp/sum") bytes, whole diff $(wc -c <"$tmp/full") bytes"
curl -sf -o /dev/null -w "the summary again: %{time_total} s\n" "$u/diff/summary?a=$A&b=$B"
curl -sf -o /dev/null -w "a page of 200 rows: %{time_total} s, %{size_download} bytes\n" \
    "$u/diff/layers?a=$A&b=$B&offset=$((pairs))&limit=200"
curl -sf -o /dev/null -w "a filtered page (op=Tanh): %{time_total} s\n" "$u/diff/layers?a=$A&b=$B&op=Tanh"
curl -sf -o /dev/null -w "a run document: %{size_download} bytes\n" "$u/runs/$A"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
node "$src/tests/bench/web_depth.mjs" "http://127.0.0.1:$port" "http://127.0.0.1:$((port + 1))" \
    "#/diff?a=$A&b=$B" "$rounds"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
