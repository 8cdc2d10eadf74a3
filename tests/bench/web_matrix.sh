#!/bin/sh
# tests/bench/web_matrix.sh: the device matrix's first open and its reopens, timed in Chromium
# (docs/PERFORMANCE.md, "The dashboard at LLM depth and fleet width"), on the browser test's
# database (GD_WEB_KEEP=DIR make check TESTS=tests/web/dashboard.sh keeps it): two copies,
# each without any cached diff or matrix (so every pair of the model's devices is compared
# again), one served with this tree's web/, the other with a git revision's (PEER_REV, by
# default 2638b4a: main before issue 26), each by its own gpudiffd of BUILD; then
# tests/bench/web_matrix.mjs.
#
#   tests/bench/web_matrix.sh BUILD KEEP_DIR [PEER_REV] [MODEL] [REOPENS]
#   tests/bench/web_matrix.sh build /tmp/webkeep 2638b4a fleet-50 3
set -eu
build=$(cd "${1:?usage: web_matrix.sh BUILD KEEP_DIR [PEER_REV] [MODEL] [REOPENS]}" && pwd)
keep=${2:?keep dir}
rev=${3:-2638b4a}
model=${4:-fleet-50}
reopens=${5:-3}
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/web-matrix.XXXXXX)
pids=""
trap 'for p in $pids; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT INT TERM
mkdir "$tmp/peer"
git -C "$src" archive "$rev" web | tar -x -C "$tmp/peer"
echo "this tree: $(git -C "$src" rev-parse --short HEAD)$(git -C "$src" diff --quiet HEAD -- web || echo ' (web/ changed)'); peer: $rev at $(git -C "$src" rev-parse --short "$rev")"
for d in db1 db2; do
    cp "$keep/gpudiff.db" "$tmp/$d"
    sqlite3 "$tmp/$d" 'PRAGMA foreign_keys=ON; DELETE FROM matrix_cache; DELETE FROM diffs;'
done
echo "cached diffs left: $(sqlite3 "$tmp/db1" 'SELECT count(*) FROM diffs'), matrices: $(sqlite3 "$tmp/db1" 'SELECT count(*) FROM matrix_cache')"
port=$((20000 + $$ % 20000))
"$build/gpudiffd" --allow-root --db "$tmp/db1" --web-root "$src/web" --listen "127.0.0.1:$port" \
    --log-level warn 2>"$tmp/d1.log" &
pids="$pids $!"
"$build/gpudiffd" --allow-root --db "$tmp/db2" --web-root "$tmp/peer/web" --listen "127.0.0.1:$((port + 1))" \
    --log-level warn 2>"$tmp/d2.log" &
pids="$pids $!"
sleep 2
echo "load: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
node "$src/tests/bench/web_matrix.mjs" "http://127.0.0.1:$port" "http://127.0.0.1:$((port + 1))" "$model" "$reopens"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
