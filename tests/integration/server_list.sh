#!/bin/sh
# Listing with 10,000 runs: filters and paging are answered from the runs_by_* indexes
# (EXPLAIN QUERY PLAN says so, no full scan or sort), quickly, with the right totals.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"

"$GPUDIFFD" migrate --db "$DB" >/dev/null
# 10,000 runs of two models on two GPUs, one a minute from 2026-01-01; every 10th uploading.
sqlite3 "$DB" <<'EOF'
INSERT INTO models(id, name, created_at) VALUES (1, 'alpha', 0), (2, 'beta', 0);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
INSERT INTO runs(id, model_id, model_sha256, backend, gpu, host, created_at, created_ts, state,
                 received_at, n_layers, content_sha256, meta)
SELECT printf('%08x-0000-4000-8000-%012x', i, i), 1 + i % 2, printf('%064x', 1 + i % 2),
       'cuda', CASE WHEN i % 4 < 2 THEN 'NVIDIA H200' ELSE 'NVIDIA T4' END, 'h' || i,
       strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + 60 * i, 'unixepoch'), 1767225600 + 60 * i,
       CASE WHEN i % 10 = 9 THEN 'uploading' ELSE 'complete' END, 0, 0,
       printf('%064x', i), '{}'
FROM n;
EOF
server_start

# model alpha: even i, 5,000 runs, none uploading (i % 10 = 9 is odd).
expect 200 GET '/api/v1/runs?model=alpha&limit=50&offset=4990'
[ "$(jq '.total, (.runs | length)' "$TMP/body" | tr '\n' ' ')" = "5000 10 " ] ||
    fail "model page: $(jq -c '{total, n: (.runs | length)}' "$TMP/body")"
# The oldest alpha run is i = 0, last on the last page.
[ "$(jq -r '.runs[-1].id' "$TMP/body")" = "00000000-0000-4000-8000-000000000000" ] ||
    fail "order: $(jq -r '.runs[-1].id' "$TMP/body")"
# gpu H200: i % 4 in {0, 1}, 5,000 runs, less 500 uploading ones (i % 20 = 9).
expect 200 GET '/api/v1/runs?gpu=NVIDIA%20H200&limit=1'
[ "$(jq .total "$TMP/body")" = 4500 ] || fail "gpu total $(jq .total "$TMP/body"), want 4500"
# since 2026-01-07: i >= 8640 (60 * i >= 6 days): 1,360 runs, less 136 uploading. The newest
# complete one is i = 9998, 6 days 22:38 after the start.
expect 200 GET '/api/v1/runs?since=2026-01-07&backend=cuda'
[ "$(jq .total "$TMP/body")" = 1224 ] || fail "since total $(jq .total "$TMP/body"), want 1224"
[ "$(jq -r '.runs[0].created_at' "$TMP/body")" = "2026-01-07T22:38:00Z" ] ||
    fail "newest: $(jq -r '.runs[0].created_at' "$TMP/body")"

# The plans: an index walk in ORDER BY order, no temporary sort, no scan of the table.
for where in "r.state = 'complete'" \
    "r.state = 'complete' AND r.model_id = (SELECT id FROM models WHERE name = 'alpha')" \
    "r.state = 'complete' AND r.gpu = 'NVIDIA T4'" \
    "r.state = 'complete' AND r.backend = 'cuda'"; do
    plan=$(sqlite3 "$DB" "EXPLAIN QUERY PLAN SELECT r.id, m.name, r.host, r.state FROM runs r JOIN models m
        ON m.id = r.model_id WHERE $where ORDER BY r.created_ts DESC, r.id DESC LIMIT 50")
    echo "$plan" | grep -q 'INDEX runs_by_' || fail "no index for $where: $plan"
    echo "$plan" | grep -q 'TEMP B-TREE' && fail "a sort for $where: $plan"
done

# Deep pages stay fast: 20 requests for the last page of all runs.
start=$(date +%s%N)
i=0
while [ "$i" -lt 20 ]; do
    expect 200 GET '/api/v1/runs?limit=1000&offset=8000'
    i=$((i + 1))
done
ms=$(( ($(date +%s%N) - start) / 20000000 ))
[ "$ms" -lt 1000 ] || fail "listing took $ms ms"

# A client's request id comes back and tags the daemon's log line.
expect 200 GET /api/v1/models -H 'X-Request-Id: list-check-42' -D "$TMP/headers"
grep -qi '^x-request-id: list-check-42' "$TMP/headers" || fail "no X-Request-Id back"
server_stop
grep -q '\[list-check-42\] GET /api/v1/models 200' "$SERVER_LOG" || fail "no log line with the id"

# With --require-auth-read, reads need a token; /healthz does not.
VIEWER=$(token viewer)
server_start --require-auth-read
expect_error 401 unauthorized GET /api/v1/runs
expect_error 401 unauthorized GET /metrics
expect 200 GET /api/v1/runs -H "Authorization: Bearer $VIEWER"
expect 200 GET /healthz
server_stop
echo "server list: ok (the last page of 10,000 runs in $ms ms per request)"
