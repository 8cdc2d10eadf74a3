#!/bin/sh
# Uploads the seed case's bundle to gpudiffd with curl (POST run.json, PUT every layer,
# finish) and reads it back: every downloaded .npy is byte for byte the file sent. A second
# upload of the same bundle changes nothing in the database; a second run with identical
# tensors stores no new blob. Also: listing filters, models, baselines, /metrics, static
# files, and the compression ratio of the seed's tensors.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed

seed_bundle "$TMP/a"
seed_bundle "$TMP/b"
A=$(jq -r .id "$TMP/a/run.json")
B=$(jq -r .id "$TMP/b/run.json")
[ "$A" != "$B" ] || fail "two agent runs got the same id"
jq -c '[.layers[].sha256]' "$TMP/a/run.json" > "$TMP/sha_a"
jq -c '[.layers[].sha256]' "$TMP/b/run.json" > "$TMP/sha_b"
cmp -s "$TMP/sha_a" "$TMP/sha_b" || fail "the cpu backend gave different tensors twice"
distinct=$(jq '[.layers[].sha256] | unique | length' "$TMP/a/run.json")
n_layers=$(jq '.layers | length' "$TMP/a/run.json")

mkdir "$TMP/web"
printf '<!doctype html><title>gpudiff</title>\n' > "$TMP/web/index.html"
AGENT_TOKEN=$(token agent)
ADMIN_TOKEN=$(token admin)
server_start --web-root "$TMP/web"
auth="Authorization: Bearer $AGENT_TOKEN"

# ---- the first upload, step by step ----
expect 201 POST /api/v1/runs -H "$auth" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/a/run.json"
[ "$(jq '.layers_missing | length' "$TMP/body")" = "$n_layers" ] || fail "layers already present"
expect 404 GET "/api/v1/runs/$A"
jq -r '.layers[] | "\(.index) \(.file)"' "$TMP/a/run.json" > "$TMP/files"
while read -r index file; do
    expect 201 PUT "/api/v1/runs/$A/layers/$index" -H "$auth" -T "$TMP/a/$file"
done < "$TMP/files"
[ "$(api GET /api/v1/runs)" = 200 ] && [ "$(jq .total "$TMP/body")" = 0 ] ||
    fail "a run is listed before finish"
expect 200 POST "/api/v1/runs/$A/finish" -H "$auth"
[ "$(jq -r .state "$TMP/body")" = complete ] || fail "finish did not complete the run"

expect 200 GET /api/v1/runs
[ "$(jq -r '.total' "$TMP/body")" = 1 ] || fail "runs: $(cat "$TMP/body")"
[ "$(jq -r '.runs[0].id' "$TMP/body")" = "$A" ] || fail "runs: $(cat "$TMP/body")"
expect 200 GET "/api/v1/runs/$A"
[ "$(jq .layers_present "$TMP/body")" = "$n_layers" ] || fail "not every layer present"
jq -S 'del(.layers)' "$TMP/a/run.json" > "$TMP/sent_meta"
jq -S 'del(.layers, .state, .received_at, .finished_at, .trimmed_at, .layers_present,
        .layers_missing)' "$TMP/body" > "$TMP/got_meta"
cmp -s "$TMP/sent_meta" "$TMP/got_meta" || fail "run.json came back changed"
while read -r index file; do
    expect 200 GET "/api/v1/runs/$A/layers/$index.npy"
    cmp "$TMP/body" "$TMP/a/$file" || fail "layer $index came back different"
done < "$TMP/files"
blobs=$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')
[ "$blobs" = "$distinct" ] || fail "$blobs blobs for $distinct distinct tensors"

# ---- the same upload again: answers 200, changes nothing ----
db_dump > "$TMP/dump1"
expect 200 POST /api/v1/runs -H "$auth" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/a/run.json"
while read -r index file; do
    expect 200 PUT "/api/v1/runs/$A/layers/$index" -H "$auth" -T "$TMP/a/$file"
done < "$TMP/files"
expect 200 POST "/api/v1/runs/$A/finish" -H "$auth"
db_dump > "$TMP/dump2"
cmp -s "$TMP/dump1" "$TMP/dump2" || fail "a repeated upload changed the database"

# ---- a second run with the same tensors: nothing to send, no new blob ----
expect 201 POST /api/v1/runs -H "$auth" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/b/run.json"
[ "$(jq '.layers_missing | length' "$TMP/body")" = 0 ] || fail "known tensors were not linked"
upload_bundle "$TMP/b" "$AGENT_TOKEN"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')" = "$distinct" ] ||
    fail "identical tensors were stored twice"
expect 200 GET "/api/v1/runs/$B/layers/0.npy"
cmp "$TMP/body" "$TMP/b/layers/0000-conv1.npy" || fail "run B's layer 0 differs"

# ---- listing ----
expect 200 GET "/api/v1/runs?model=lenet-11-821&backend=cpu&since=2020-01-01"
[ "$(jq .total "$TMP/body")" = 2 ] || fail "filtered list: $(cat "$TMP/body")"
expect 200 GET "/api/v1/runs?backend=cuda"
[ "$(jq .total "$TMP/body")" = 0 ] || fail "backend filter: $(cat "$TMP/body")"
expect 200 GET "/api/v1/runs?limit=1&offset=1"
[ "$(jq '.total, (.runs | length)' "$TMP/body" | tr '\n' ' ')" = "2 1 " ] ||
    fail "paging: $(cat "$TMP/body")"
expect 200 GET /api/v1/models
[ "$(jq -r '.models[0].name, .models[0].runs' "$TMP/body" | tr '\n' ' ')" = "lenet-11-821 2 " ] ||
    fail "models: $(cat "$TMP/body")"

# ---- baseline (admin) ----
expect 200 POST /api/v1/models/lenet-11-821/baseline -H "Authorization: Bearer $ADMIN_TOKEN" \
    -H 'Content-Type: application/json' --data "{\"run\": \"$A\"}"
expect 200 GET /api/v1/models
[ "$(jq -r '.models[0].baseline' "$TMP/body")" = "$A" ] || fail "baseline: $(cat "$TMP/body")"

# ---- tokens over the API (admin) ----
expect 201 POST /api/v1/tokens -H "Authorization: Bearer $ADMIN_TOKEN" \
    -H 'Content-Type: application/json' --data '{"role": "viewer", "label": "dashboard"}'
VIEWER=$(jq -r .token "$TMP/body")
VIEWER_ID=$(jq -r .id "$TMP/body")
expect 200 GET /api/v1/models -H "Authorization: Bearer $VIEWER"
expect 200 GET /api/v1/tokens -H "Authorization: Bearer $ADMIN_TOKEN"
jq -e --arg v "$VIEWER" '[.tokens[] | select(.label == "dashboard" and .role == "viewer")] | length == 1
    and (tostring | contains($v) | not)' "$TMP/body" >/dev/null || fail "token list: $(cat "$TMP/body")"
expect 200 DELETE "/api/v1/tokens/$VIEWER_ID" -H "Authorization: Bearer $ADMIN_TOKEN"
expect 401 GET /api/v1/models -H "Authorization: Bearer $VIEWER"

# ---- metrics ----
expect 200 GET /metrics
grep -q '^gpudiffd_runs{state="complete"} 2$' "$TMP/body" || fail "metrics: runs"
grep -q "^gpudiffd_blobs $distinct\$" "$TMP/body" || fail "metrics: blobs"
grep -q "^gpudiffd_http_requests_total{route=\"/api/v1/runs/{id}/layers/{index}\",method=\"PUT\",status=\"201\"} $n_layers\$" \
    "$TMP/body" || fail "metrics: PUT 201 count"
grep -q '^gpudiffd_ingest_body_bytes_total [1-9]' "$TMP/body" || fail "metrics: bytes"

# ---- static files ----
expect 200 GET / -D "$TMP/headers"
cmp -s "$TMP/body" "$TMP/web/index.html" || fail "/ is not index.html"
grep -qi '^content-type: text/html' "$TMP/headers" || fail "index.html content type"
grep -qi "^content-security-policy: default-src 'none'; script-src 'self'" "$TMP/headers" || fail "no CSP on static files"
grep -qi '^x-content-type-options: nosniff' "$TMP/headers" || fail "no nosniff on static files"

# ---- the compression ratio of the seed's tensors (a report in SQLite's SQL: printf, a
# bare column in GROUP BY; not printed on PostgreSQL, tests/integration/server_pg.sh) ----
[ -n "${GD_TEST_DB:-}" ] || sqlite3 "$DB" "SELECT 'compression: ' || count(*) || ' blobs, ' || sum(raw_size) || ' bytes raw, '
    || sum(stored_size) || ' stored, ratio ' || printf('%.3f', 1.0 * sum(raw_size) / sum(stored_size))
    FROM blobs"
[ -n "${GD_TEST_DB:-}" ] || sqlite3 "$DB" "SELECT '  ' || l.name || ': ' || b.raw_size || ' -> ' || b.stored_size || ' ('
    || printf('%.2f', 1.0 * b.raw_size / b.stored_size) || 'x)' FROM blobs b
    JOIN layers l ON l.sha256 = b.sha256 AND l.run_id = '$A' GROUP BY b.sha256 ORDER BY l.idx"
server_stop

# ---- retention: run A received 3 days ago, kept 2 days: its tensors go, B's (the same
# blobs) stay, and A's records remain ----
sqlite3 "$DB" "UPDATE runs SET received_at = received_at - 3 * 86400 WHERE id = '$A'"
server_start --retention-days 2
tries=0
until grep -q 'retention (2 days): 1 runs trimmed, 0 unfinished runs deleted, 0 blobs' \
    "$SERVER_LOG"; do
    tries=$((tries + 1))
    [ "$tries" -le 100 ] || fail "retention did not run at start"
    sleep 0.1
done
expect_error 410 gone GET "/api/v1/runs/$A/layers/0.npy"
expect 200 GET "/api/v1/runs/$A"
[ "$(jq '[.layers[] | select(.present and (.stored | not))] | length' "$TMP/body")" = "$n_layers" ] ||
    fail "trimmed run: $(jq -c '[.layers[] | {present, stored}]' "$TMP/body")"
expect 200 GET "/api/v1/runs/$B/layers/0.npy"
cmp "$TMP/body" "$TMP/b/layers/0000-conv1.npy" || fail "retention took run B's data"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')" = "$distinct" ] || fail "blobs after retention"
server_stop
echo "server upload: ok"
