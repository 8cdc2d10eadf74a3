#!/bin/sh
# A cached diff is served byte for byte as it was computed (issue 24: on PostgreSQL its text
# now comes in the lookup's own query, in bytea's escape form, decoded here; on SQLite as a
# piece, as before): two runs whose env holds non-ASCII text and backslashes, their diff
# asked twice: a miss, then a hit with the same bytes. server_pg.sh runs it on PostgreSQL.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_numpy
T=$(token agent); A="Authorization: Bearer $T"
server_start
"$PYTHON_NUMPY" - "$TMP" <<'PY'
import json, sys, hashlib, numpy as np
d = sys.argv[1]
for k, (rid, scale) in enumerate([("aaaaaaaa-0000-4000-8000-000000000001", 1.0), ("aaaaaaaa-0000-4000-8000-000000000002", 1.0 + 1e-6)]):
    x = (np.arange(64, dtype=np.float32) * scale).astype(np.float32)
    np.save("%s/l%d.npy" % (d, k), x)
    doc = {"format": "gpudiff-run", "version": 1, "id": rid, "created_at": "2026-01-01T00:00:00Z",
           "model": {"name": "m\u00f6del \\ \"q\"", "sha256": None}, "backend": "cpu",
           "env": {"host": "h\u00f6st\\\\x\u4e2d", "cpu": "c\\n"},
           "layers": [{"index": 0, "name": "l0", "op": "Relu", "dtype": "float32", "shape": [64],
                       "file": "layers/0000-l0.npy", "sha256": hashlib.sha256(x.tobytes()).hexdigest()}]}
    json.dump(doc, open("%s/r%d.json" % (d, k), "w"), ensure_ascii=False)
PY
for k in 0 1; do
  id=$(jq -r .id "$TMP/r$k.json")
  expect 201 POST /api/v1/runs -H "$A" -H 'Content-Type: application/json' --data-binary @"$TMP/r$k.json"
  expect 201 PUT "/api/v1/runs/$id/layers/0" -H "$A" -T "$TMP/l$k.npy"
  expect 200 POST "/api/v1/runs/$id/finish" -H "$A"
done
Q="/api/v1/diff?a=aaaaaaaa-0000-4000-8000-000000000001&b=aaaaaaaa-0000-4000-8000-000000000002"
curl -s -D "$TMP/h1" -o "$TMP/d1" "$URL$Q"; curl -s -D "$TMP/h2" -o "$TMP/d2" "$URL$Q"
grep -qi '^X-Cache: miss' "$TMP/h1" && grep -qi '^X-Cache: hit' "$TMP/h2" ||
    fail "not a miss then a hit: $(cat "$TMP/h1" "$TMP/h2")"
cmp -s "$TMP/d1" "$TMP/d2" || fail "the cached text differs from the one computed"
grep -qF 'mödel \\ \"q\"' "$TMP/d2" ||
    fail "the diff holds no non-ASCII text or backslash to check: $(head -c 400 "$TMP/d2")"
echo "ok: a cached diff (non-ASCII text and backslashes in it) is served as computed, byte for byte ($(wc -c <"$TMP/d2") bytes)"
