#!/bin/sh
# The diff cache's cap (issue 25 item 3; docs/SERVER.md, "The cache"): with
# --diff-cache-max 1M, 30 diffs of two 120-layer runs under 30 distinct atol values (each
# about 120 KB, so 3.7 MB in all without the cap; before it, every one stayed) leave at most
# 1 MiB of cached diffs, counted in /metrics (bytes, entries, evictions, the limit), and the
# diff with the default tolerances, older than all of them, is still served from the cache:
# other tolerances go first. Tolerances are numbers, not text: 1e-8, 0.00000001, 1.0e-8 and
# 10e-9 are one key. Runs on SQLite here and on PostgreSQL in server_pg.sh.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
command -v python3 >/dev/null || skip "python3 is not installed (deploy/setup.sh)"
server_start --diff-cache-max 1M
TOKEN=$(token agent)

# dumps DIR SHIFT: 120 layers of 64 float32 values each, SHIFT added to the last few
python3 - "$TMP/dump-a" 0 "$TMP/dump-b" 1e-4 <<'PY'
import os, struct, sys
for d, shift in ((sys.argv[1], float(sys.argv[2])), (sys.argv[3], float(sys.argv[4]))):
    os.makedirs(d)
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': (64,), }"
    head += " " * (64 - 10 - len(head) - 1) + "\n"
    for i in range(120):
        vals = [((i * 64 + k) % 97) / 7.0 + (shift * k if i >= 100 else 0) for k in range(64)]
        with open(os.path.join(d, "l%03d.npy" % i), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
            f.write(struct.pack("<64f", *vals))
PY
for r in a b; do
    "$AGENT" bundle --from "$TMP/dump-$r" --out "$TMP/$r" --model cache-test >/dev/null
    GPUDIFF_TOKEN=$TOKEN "$AGENT" push "$TMP/$r" --server "$URL" >/dev/null 2>&1 ||
        fail "push of run $r"
done
A=$(jq -r .id "$TMP/a/run.json")
B=$(jq -r .id "$TMP/b/run.json")

# xcache QUERY: the X-Cache header of GET /api/v1/diff?a=A&b=B&QUERY
xcache() {
    curl -sS -D "$TMP/headers" -o "$TMP/body" "$URL/api/v1/diff?a=$A&b=$B$1" >/dev/null
    grep -q '^HTTP/1.1 200' "$TMP/headers" || fail "diff $1: $(head -n1 "$TMP/headers") $(head -c 300 "$TMP/body")"
    sed -n 's/^X-Cache: \([a-z]*\).*/\1/p' "$TMP/headers"
}
metric() { curl -sS "$URL/metrics" | sed -n "s/^$1 //p"; }

[ "$(xcache "")" = miss ] || fail "the first diff was cached already"
for q in "" "&atol=1e-8" "&atol=0.00000001" "&atol=1.0e-8" "&atol=10e-9" "&rtol=0.00001" \
    "&atol=1e-8&rtol=1e-5"; do
    [ "$(xcache "$q")" = hit ] || fail "diff$q was not the cached default diff"
done
echo "ok: 1e-8, 0.00000001, 1.0e-8, 10e-9 and the default are one cached diff"
size=$(wc -c <"$TMP/body")
[ "$size" -gt 100000 ] || fail "a diff of 120 layers is only $size bytes"

i=0
while [ "$i" -lt 30 ]; do
    i=$((i + 1))
    [ "$(xcache "&atol=0.00$((1000 + i))")" = miss ] || fail "atol 0.00$((1000 + i)) was cached"
done
bytes=$(metric gpudiffd_diff_cache_bytes)
entries=$(metric gpudiffd_diff_cache_entries)
evicted=$(metric gpudiffd_diff_cache_evictions_total)
limit=$(metric gpudiffd_diff_cache_limit_bytes)
[ "$limit" = 1048576 ] || fail "gpudiffd_diff_cache_limit_bytes $limit"
[ -n "$bytes" ] && [ "$bytes" -le 1048576 ] || fail "gpudiffd_diff_cache_bytes $bytes over 1 MiB"
[ "$evicted" -ge 20 ] || fail "only $evicted evictions of 31 diffs of $size bytes under 1 MiB"
stored=$(sqlite3 "$DB" "SELECT CAST(coalesce(sum(bytes), 0) AS BIGINT) FROM diffs")
[ "$stored" = "$bytes" ] || fail "/metrics says $bytes bytes, the table $stored"
text=$(sqlite3 "$DB" "SELECT CAST(coalesce(sum(length(json)), 0) AS BIGINT) FROM diffs")
[ "$text" -le 1048576 ] || fail "the cached text is $text bytes"
echo "ok: 31 diffs of $size bytes: $entries cached ($bytes bytes), $evicted evicted, the limit 1 MiB"

[ "$(xcache "")" = hit ] || fail "the default diff was evicted before the others"
[ "$(xcache "&atol=0.001001")" = miss ] || fail "the oldest other tolerance stayed"
echo "ok: the default diff stayed; the least recently used of the others went"
