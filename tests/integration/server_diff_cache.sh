#!/bin/sh
# The diff cache's cap (issue 25 item 3; docs/SERVER.md, "The cache"): with
# --diff-cache-max 1M, 30 diffs of two 120-layer runs under 30 distinct atol values (each
# about 120 KB, so 3.7 MB in all without the cap; before it, every one stayed) leave at most
# 1 MiB of cached diffs, counted in /metrics (bytes, entries, evictions, the limit), and the
# diff with the default tolerances, older than all of them, is still served from the cache:
# other tolerances go first. Tolerances are numbers, not text: 1e-8, 0.00000001, 1.0e-8 and
# 10e-9 are one key. A read is a use: of two small diffs (served inline, under 64 KiB),
# the one read since is evicted after the other (on PostgreSQL such a read was not noted,
# and the read one went first). Runs on SQLite here and on PostgreSQL in server_pg.sh.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
command -v python3 >/dev/null || skip "python3 is not installed (deploy/setup.sh)"
server_start --diff-cache-max 1M
TOKEN=$(token agent)

# dumps: DIR SHIFT LAYERS, twice: LAYERS layers of 64 float32 values each, SHIFT added to
# the last sixth
python3 - "$TMP/dump-a" 0 120 "$TMP/dump-b" 1e-4 120 "$TMP/dump-c" 0 50 "$TMP/dump-d" 1e-4 50 \
    "$TMP/dump-e" 0 40 "$TMP/dump-f" 1e-4 40 <<'PY'
import os, struct, sys
a = sys.argv[1:]
for d, shift, n in zip(a[0::3], map(float, a[1::3]), map(int, a[2::3])):
    os.makedirs(d)
    head = "{'descr': '<f4', 'fortran_order': False, 'shape': (64,), }"
    head += " " * (64 - 10 - len(head) - 1) + "\n"
    for i in range(n):
        vals = [((i * 64 + k) % 97) / 7.0 + (shift * k if i >= n - n // 6 else 0)
                for k in range(64)]
        with open(os.path.join(d, "l%03d.npy" % i), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
            f.write(struct.pack("<64f", *vals))
PY
for r in a b c d e f; do
    "$AGENT" bundle --from "$TMP/dump-$r" --out "$TMP/$r" --model cache-test >/dev/null
    GPUDIFF_TOKEN=$TOKEN "$AGENT" push "$TMP/$r" --server "$URL" >/dev/null 2>&1 ||
        fail "push of run $r"
done
A=$(jq -r .id "$TMP/a/run.json")
B=$(jq -r .id "$TMP/b/run.json")
C=$(jq -r .id "$TMP/c/run.json")
D=$(jq -r .id "$TMP/d/run.json")
E=$(jq -r .id "$TMP/e/run.json")
F=$(jq -r .id "$TMP/f/run.json")

# xcache QUERY [X Y]: the X-Cache header of GET /api/v1/diff?a=A&b=B&QUERY (a=X&b=Y)
xcache() {
    curl -sS -D "$TMP/headers" -o "$TMP/body" "$URL/api/v1/diff?a=${2:-$A}&b=${3:-$B}$1" >/dev/null
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

# A read is a use, for a diff served inline too (on PostgreSQL its text is read with its
# row, up to 64 KiB). Two diffs of C and D (50 layers) at atol 0.5 and 0.6, then 0.5 read;
# then diffs of E and F (40 layers: smaller) until 0.6 is evicted: 0.5 must still be there.
[ "$(xcache "&atol=0.5" "$C" "$D")" = miss ] || fail "the diff of C and D at atol 0.5 was cached"
small=$(wc -c <"$TMP/body")
[ "$small" -lt 65536 ] || fail "the diff of C and D is $small bytes"
[ "$(xcache "&atol=0.6" "$C" "$D")" = miss ] || fail "the diff of C and D at atol 0.6 was cached"
sleep 2 # last_used counts seconds: the read below is later than both diffs were made
[ "$(xcache "&atol=0.5" "$C" "$D")" = hit ] || fail "the diff of C and D at atol 0.5 is not cached"
# cached ATOL: a diff of C and D at ATOL is in the table (read without a use)
cached() {
    [ "$(sqlite3 "$DB" "SELECT count(*) FROM diffs WHERE run_a = '$C' AND atol = $1")" = 1 ]
}
i=0
while cached 0.6; do
    i=$((i + 1))
    [ "$i" -le 40 ] || fail "40 diffs of E and F did not evict the diff at atol 0.6"
    [ "$(xcache "&atol=0.0$((2000 + i))" "$E" "$F")" = miss ] || fail "atol 0.0$((2000 + i)) was cached"
    cached 0.5 || fail "the diff read last went before the one not read since it was made"
done
echo "ok: of two diffs of $small bytes, the one read since stayed when the other went ($i diffs later)"
