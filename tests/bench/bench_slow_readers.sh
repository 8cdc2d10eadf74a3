#!/bin/sh
# bench_slow_readers.sh [CLIENTS] [TENSOR_MIB] [GPUDIFFD]: clients that ask for a large
# tensor and never read it (issue 25 item 2; docs/PERFORMANCE.md, "Clients that never
# read"). Starts GPUDIFFD (default: this build's) on 127.0.0.1 with a fresh SQLite file,
# pushes one tensor of TENSOR_MIB MiB (default 32), warms the daemon with 16 whole
# downloads, then runs tests/integration/slow_readers.py with CLIENTS (default 1000) from
# 40 addresses and prints its JSON: resident memory before, at the peak and after, per
# client, and a /healthz time meanwhile. Run from the build folder.
set -eu
CLIENTS=${1:-1000}
MIB=${2:-32}
. ./tests/integration/env.sh
GPUDIFFD=${3:-"$GD_BUILDDIR/gpudiffd"}
DB="$TMP/bench.db"
"$GPUDIFFD" token create --role agent --db "$DB" >"$TMP/token" 2>/dev/null
root=""
[ "$(id -u)" != 0 ] || root=--allow-root
"$GPUDIFFD" --db "$DB" --listen 127.0.0.1:0 --log-level info --max-connections 4096 $root \
    2>"$TMP/log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$TMP"' EXIT
port=""
tries=0
while [ -z "$port" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 100 ] && kill -0 $PID || { echo "gpudiffd did not start" >&2; exit 1; }
    sleep 0.1
    port=$(sed -n 's|.*listening on http://127\.0\.0\.1:\([0-9]*\)/.*|\1|p' "$TMP/log")
done
python3 - "$TMP/dump" "$MIB" <<'PY'
import os, struct, sys
os.makedirs(sys.argv[1])
n = int(sys.argv[2]) << 18
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
head += " " * (128 - 10 - len(head) - 1) + "\n"
b = bytearray(os.urandom(4 * n))
b[3::4] = bytes([0x3f]) * n
with open(os.path.join(sys.argv[1], "big.npy"), "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + bytes(b))
PY
"$AGENT" bundle --from "$TMP/dump" --out "$TMP/big" --model bench >/dev/null
GPUDIFF_TOKEN=$(cat "$TMP/token") "$AGENT" push "$TMP/big" --server "http://127.0.0.1:$port" \
    >/dev/null 2>&1
ID=$(sed -n 's/.*"id": *"\([0-9a-f-]*\)".*/\1/p' "$TMP/big/run.json" | head -n 1)
i=0
pids=""
while [ "$i" -lt 16 ]; do
    curl -sS -o /dev/null "http://127.0.0.1:$port/api/v1/runs/$ID/layers/0.npy" &
    pids="$pids $!"
    i=$((i + 1))
done
for p in $pids; do wait "$p"; done
python3 "$GD_SRCDIR/tests/integration/slow_readers.py" "$port" "/api/v1/runs/$ID/layers/0.npy" \
    "$CLIENTS" "$PID" 5 40
