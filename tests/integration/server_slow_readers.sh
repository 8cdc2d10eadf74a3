#!/bin/sh
# Bounded memory per connection (issue 25 item 2; docs/SERVER.md, "Memory"): 300 clients
# from 8 addresses ask for an 8 MiB tensor and never read it (slow_readers.py). Each may
# hold what the daemon buffers for it: a 32 KiB piece of the answer, libmicrohttpd's pool
# (2 x --max-header + 16 KiB) and the request's own structures, 160 KiB in all here; so the
# daemon's resident memory may grow by 300 x 160 KiB at most while they hold, /healthz
# still answers, and once they close it comes back to within 10% of where it was. Before,
# each such client held its zstd window and decoder (4.1 MB): 300 took 1.2 GB, and after
# they closed most of it stayed. tests/bench/bench_slow_readers.sh measures 1,000.
# The baseline is the daemon warm: 16 whole downloads first, so every thread has made its
# cache of decoded blocks (4 blocks of 256 KiB and a decoder, per thread). Then answers
# made in memory: with --response-memory 16M, 24 clients that never read a run document of
# 4.8 MB hold at most 16 MiB of them; the others are answered 503 busy at once, and once
# the readers are gone the document is served again.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
command -v python3 >/dev/null || skip "python3 is not installed (deploy/setup.sh)"
server_start
TOKEN=$(token agent)

python3 - "$TMP/dump" <<'PY'
import os, struct, sys
os.makedirs(sys.argv[1])
n = 2 << 20  # 8 MiB of float32: bytes at random, the top byte fixed to keep them finite
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
head += " " * (128 - 10 - len(head) - 1) + "\n"
b = bytearray(os.urandom(4 * n))
b[3::4] = bytes([0x3f]) * n
with open(os.path.join(sys.argv[1], "big.npy"), "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode() + bytes(b))
PY
"$AGENT" bundle --from "$TMP/dump" --out "$TMP/big" --model slow-readers >/dev/null
GPUDIFF_TOKEN=$TOKEN "$AGENT" push "$TMP/big" --server "$URL" >/dev/null 2>&1 || fail "push"
ID=$(jq -r .id "$TMP/big/run.json")
LAYER="/api/v1/runs/$ID/layers/0.npy"
want=$(wc -c <"$TMP/dump/big.npy")

# warm: every thread decodes blocks once; the downloads are byte for byte the file
i=0
pids=""
while [ "$i" -lt 16 ]; do
    curl -sS -o "$TMP/down.$i" "$URL$LAYER" &
    pids="$pids $!"
    i=$((i + 1))
done
for p in $pids; do wait "$p" || fail "a warm-up download failed"; done
for f in "$TMP"/down.*; do cmp -s "$f" "$TMP/dump/big.npy" || fail "a download differs: $f"; done
rm -f "$TMP"/down.*

python3 "$GD_SRCDIR/tests/integration/slow_readers.py" "$port" "$LAYER" 300 "$SERVER_PID" 3 8 \
    >"$TMP/slow.json"
cat "$TMP/slow.json"
budget=$((300 * 160 * 1024))
jq -e --argjson b "$budget" '.begun == 300 and .refused == 0 and .unanswered == 0 and
    .healthz_ok and .peak_rss - .baseline_rss <= $b' "$TMP/slow.json" >/dev/null ||
    fail "300 clients that never read: $(jq -c '{begun, refused, unanswered, healthz_ok,
        grew: (.peak_rss - .baseline_rss), budget: '"$budget"'}' "$TMP/slow.json")"
jq -e '.after_rss <= .baseline_rss * 1.10' "$TMP/slow.json" >/dev/null ||
    fail "after they closed the daemon holds $(jq '.after_rss - .baseline_rss' "$TMP/slow.json") bytes more than before"
echo "ok: 300 clients that never read: $(jq -r '"\(.baseline_rss / 1048576 | floor) MB -> \(.peak_rss / 1048576 | floor) MB (\(.per_client / 1024 | floor) KiB each, at most 160), \(.after_rss / 1048576 | floor) MB after; /healthz in \(.healthz_s) s"' "$TMP/slow.json")"

# The download still comes whole after them, and from a fresh thread cache's view too.
curl -sS -o "$TMP/after.npy" "$URL$LAYER"
cmp -s "$TMP/after.npy" "$TMP/dump/big.npy" || fail "the download after them differs"
[ "$(wc -c <"$TMP/after.npy")" = "$want" ] || fail "size"
echo "ok: the tensor downloads byte for byte before and after"

# ---- answers made in memory: --response-memory ----
# A run of 12,000 layers of the same four values: a one-layer run stores the tensor, so the
# big run's POST links every layer to it (nothing to send) and its document is 5 MB,
# more than the kernel's send buffer takes off the daemon on loopback (up to tcp_wmem's
# 4 MB), so the daemon holds each until its reader reads.
server_stop
server_start --response-memory 16M
python3 - "$TMP/one" <<'PY'
import os, struct, sys
os.makedirs(sys.argv[1])
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
head += " " * (64 - 10 - len(head) - 1) + "\n"
with open(os.path.join(sys.argv[1], "layer.npy"), "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    f.write(struct.pack("<4f", 1, 2, 3, 4))
PY
"$AGENT" bundle --from "$TMP/one" --out "$TMP/onerun" --model slow-readers >/dev/null
GPUDIFF_TOKEN=$TOKEN "$AGENT" push "$TMP/onerun" --server "$URL" >/dev/null 2>&1 || fail "push"
MANY=$(python3 -c 'import uuid; print(uuid.uuid4())')
jq --arg id "$MANY" '.id = $id | .layers = [range(0; 12000) as $i |
    .layers[0] + {index: $i, name: "layer\($i)", file: "layers/\($i).npy"}]' \
    "$TMP/onerun/run.json" >"$TMP/many.json"
expect 201 POST /api/v1/runs -H "Authorization: Bearer $TOKEN" \
    -H 'Content-Type: application/json' --data-binary @"$TMP/many.json"
jq -e '.layers_missing == []' "$TMP/body" >/dev/null || fail "the big run's layers are not linked"
expect 200 POST "/api/v1/runs/$MANY/finish" -H "Authorization: Bearer $TOKEN"
size=$(curl -sS "$URL/api/v1/runs/$MANY" | wc -c)
[ "$size" -gt 4500000 ] || fail "the run document is only $size bytes"
python3 "$GD_SRCDIR/tests/integration/slow_readers.py" "$port" "/api/v1/runs/$MANY" 24 \
    "$SERVER_PID" 1 8 >"$TMP/docs.json"
cat "$TMP/docs.json"
fits=$((16777216 / size))
jq -e --argjson f "$fits" '.begun + .refused == 24 and .begun >= 1 and .begun <= $f and
    .refused >= 24 - $f' "$TMP/docs.json" >/dev/null ||
    fail "24 readers of a $size-byte document under 16 MiB: $(jq -c '{begun, refused}' "$TMP/docs.json")"
grep -q 'response-memory' "$SERVER_LOG" || fail "no 503 names --response-memory"
expect 200 GET "/api/v1/runs/$MANY"
curl -sS "$URL/metrics" | grep -q '^gpudiffd_response_memory_bytes{state="held"} 0$' ||
    fail "held: $(curl -sS "$URL/metrics" | grep response_memory)"
echo "ok: 24 readers of a $size-byte run document: $(jq .begun "$TMP/docs.json") held (16 MiB), $(jq .refused "$TMP/docs.json") answered 503; served again after"
