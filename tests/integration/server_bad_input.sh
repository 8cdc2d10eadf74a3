#!/bin/sh
# Malformed requests to gpudiffd, more than 40 kinds: each must get its 4xx status and a
# JSON error {"error": {"code", "message"}} with the expected code, and together they must
# leave the database exactly as it was (sqlite3 .dump before and after).
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed

# The seed bundle without its two 24 MB layers (and, fp, its fingerprints: 12 KB a layer), so
# that --max-body 8M and --max-json 64K let all the rest in
# and one of the big files can be the oversized body.
seed_bundle "$TMP/seed"
jq '.layers = [.layers[2:] | to_entries[] | .value + {index: .key} | del(.fingerprint)]' \
    "$TMP/seed/run.json" > "$TMP/run.json"
jq -r '.layers[] | "\(.index) \(.file)"' "$TMP/run.json" > "$TMP/files"
npy() { sed -n "$(($1 + 1))s/^[0-9]* //p" "$TMP/files"; }   # file of layer $1
ID=$(jq -r .id "$TMP/run.json")
n_layers=$(jq '.layers | length' "$TMP/run.json")
last=$((n_layers - 1))

mkdir "$TMP/web"
printf '<!doctype html><title>gpudiff</title>\n' > "$TMP/web/index.html"
AGENT_TOKEN=$(token agent)
VIEWER=$(token viewer)
ADMIN=$(token admin)
server_start --max-body 8M --max-json 64K --web-root "$TMP/web"
A="Authorization: Bearer $AGENT_TOKEN"
JSON='Content-Type: application/json'

# A run with every layer but the last uploaded, so it cannot be finished.
expect 201 POST /api/v1/runs -H "$A" -H "$JSON" --data-binary @"$TMP/run.json"
i=0
while [ "$i" -lt "$last" ]; do
    expect 201 PUT "/api/v1/runs/$ID/layers/$i" -H "$A" -T "$TMP/seed/$(npy "$i")"
    i=$((i + 1))
done
db_dump > "$TMP/before.sql"

# post_run JQ-FILTER STATUS CODE: POST the run changed by the filter.
post_run() {
    jq "$1" "$TMP/run.json" > "$TMP/bad.json"
    expect_error "$2" "$3" POST /api/v1/runs -H "$A" -H "$JSON" --data-binary @"$TMP/bad.json"
}
NEW='.id = "33333333-3333-4333-8333-333333333333"'
count=0
step() { count=$((count + 1)); }

# ---- run.json ----
step; printf '{"format": "gpudiff-run", ' > "$TMP/cut.json"
expect_error 400 bad_json POST /api/v1/runs -H "$A" -H "$JSON" --data-binary @"$TMP/cut.json"
step; expect_error 400 bad_json POST /api/v1/runs -H "$A" -H "$JSON" --data-binary ''
step; expect_error 400 bad_json POST /api/v1/runs -H "$A" -H "$JSON" \
    --data-binary '{"id": 1, "id": 2}'
step; expect_error 400 bad_request POST /api/v1/runs -H "$A" -H "$JSON" --data-binary '[]'
step; post_run "$NEW | .version = \"1\"" 400 bad_request
step; post_run "$NEW | .format = \"other\"" 400 bad_request
step; post_run '.id = "not-a-uuid"' 400 bad_request
step; post_run "$NEW | del(.model)" 400 bad_request
step; post_run "$NEW | .created_at = \"yesterday\"" 400 bad_request
step; post_run "$NEW | .layers = {}" 400 bad_request
step; post_run "$NEW | .layers[0].index = 5" 400 bad_request
step; post_run "$NEW | .layers[0].shape = [1000, -6, 16, 16]" 400 bad_request
step; post_run "$NEW | .layers[0].shape = [1,1,1,1,1,1,1,1,1]" 400 bad_request
step; post_run "$NEW | .layers[0].shape[0] = \"1000\"" 400 bad_request
step; post_run "$NEW | .layers[0].dtype = \"complex64\"" 400 bad_request
step; post_run "$NEW | .layers[0].sha256 = \"ABC\"" 400 bad_request
step; post_run "$NEW | .layers[0].file = \"../../etc/passwd\"" 400 bad_request
# SQL-like and HTML strings where names are identifiers (backends, layers: they become file
# names) are refused; a model's name is free text, stored through bound parameters and shown
# as text, and only control characters and broken UTF-8 are refused there.
step; post_run "$NEW | .backend = \"x'; DROP TABLE runs; --\"" 400 bad_request
step; post_run "$NEW | .model.name = \"line\\nbreak\"" 400 bad_request
step; post_run "$NEW | .layers[1].name = \"<script>alert(1)</script>\"" 400 bad_request
step; post_run "$NEW | .env.host = 42" 400 bad_request
step; post_run "$NEW | .layers[0].shape = [100000, 100000]" 400 out_of_range
step; post_run '.created_at = "2026-01-01T00:00:00Z"' 409 conflict
step; head -c 70000 /dev/zero | tr '\0' ' ' > "$TMP/big.json"
expect_error 413 body_too_large POST /api/v1/runs -H "$A" -H "$JSON" --data-binary @"$TMP/big.json"
step; expect_error 415 unsupported_media_type POST /api/v1/runs -H "$A" -H 'Content-Type: text/plain' \
    --data-binary @"$TMP/run.json"

# ---- tokens ----
step; expect_error 401 unauthorized POST /api/v1/runs -H "$JSON" --data-binary @"$TMP/run.json"
step; expect_error 401 unauthorized POST /api/v1/runs -H "$JSON" --data-binary @"$TMP/run.json" \
    -H "Authorization: Bearer gd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
step; expect_error 401 unauthorized POST /api/v1/runs -H "$JSON" --data-binary @"$TMP/run.json" \
    -H "Authorization: Basic YWdlbnQ6c2VjcmV0"
step; expect_error 401 unauthorized GET /api/v1/runs -H "Authorization: Bearer ' OR 1=1 --"
step; expect_error 403 forbidden POST /api/v1/runs -H "Authorization: Bearer $VIEWER" -H "$JSON" \
    --data-binary @"$TMP/run.json"
step; expect_error 403 forbidden POST /api/v1/models/lenet-11-821/baseline -H "$A" -H "$JSON" \
    --data "{\"run\": \"$ID\"}"
step; expect_error 401 unauthorized GET "/api/v1/runs/$ID?include=uploading"
step; expect_error 400 bad_request POST /api/v1/tokens -H "Authorization: Bearer $ADMIN" -H "$JSON" \
    --data '{"role": "root"}'

# ---- layer bodies ----
body2=$TMP/seed/$(npy 2)
size2=$(wc -c < "$body2")
head -c $((size2 - 100)) "$body2" > "$TMP/short.npy"
cat "$body2" > "$TMP/long.npy"
head -c 100 /dev/zero >> "$TMP/long.npy"
head -c "$size2" /dev/urandom > "$TMP/noise.npy"
# A header claiming the layer's dtype and shape but Fortran order, same length as the file.
sed '1s/False/True /' "$body2" > "$TMP/fortran.npy"
step; expect_error 404 not_found PUT "/api/v1/runs/44444444-4444-4444-8444-444444444444/layers/0" \
    -H "$A" -T "$body2"
step; expect_error 404 not_found PUT "/api/v1/runs/$ID/layers/99" -H "$A" -T "$body2"
step; expect_error 400 bad_request PUT "/api/v1/runs/$ID/layers/-1" -H "$A" -T "$body2"
step; expect_error 400 bad_request PUT "/api/v1/runs/$ID/layers/abc" -H "$A" -T "$body2"
step; expect_error 400 bad_body PUT "/api/v1/runs/$ID/layers/2" -H "$A" -T "$TMP/short.npy"
step; expect_error 400 bad_body PUT "/api/v1/runs/$ID/layers/2" -H "$A" -T "$TMP/long.npy"
step; expect_error 400 bad_body PUT "/api/v1/runs/$ID/layers/$last" -H "$A" -T "$body2"
step; expect_error 400 bad_body PUT "/api/v1/runs/$ID/layers/2" -H "$A" -T "$TMP/noise.npy"
step; expect_error 400 bad_body PUT "/api/v1/runs/$ID/layers/2" -H "$A" -T "$TMP/fortran.npy"
# The dtype changed in the header, the length the same.
sed "1s/'<f4'/'<i4'/" "$body2" > "$TMP/int32.npy"
step; expect_error 400 bad_body PUT "/api/v1/runs/$ID/layers/2" -H "$A" -T "$TMP/int32.npy"
# Layers 3 and 4 (maxpool2 1000x16x1x1, flatten 1000x16) hold the same bytes in other shapes.
step; expect_error 400 bad_body PUT "/api/v1/runs/$ID/layers/4" -H "$A" -T "$TMP/seed/$(npy 3)"
# Layers 1 and 2 (conv2, relu2) have the same shape and different data.
step; expect_error 400 hash_mismatch PUT "/api/v1/runs/$ID/layers/2" -H "$A" \
    -T "$TMP/seed/$(npy 1)"
step; expect_error 413 body_too_large PUT "/api/v1/runs/$ID/layers/0" -H "$A" \
    -T "$TMP/seed/layers/0000-conv1.npy"
step; expect_error 411 length_required PUT "/api/v1/runs/$ID/layers/$last" -H "$A" \
    -H 'Transfer-Encoding: chunked' --data-binary @"$TMP/seed/$(npy "$last")"
step; expect_error 409 run_incomplete POST "/api/v1/runs/$ID/finish" -H "$A"
step; expect_error 404 not_found POST "/api/v1/runs/44444444-4444-4444-8444-444444444444/finish" -H "$A"

# ---- reads ----
step; expect_error 404 not_found GET "/api/v1/runs/$ID"
step; expect_error 400 bad_request GET /api/v1/runs/not-a-uuid
step; expect_error 400 bad_request GET '/api/v1/runs?limit=abc'
step; expect_error 400 bad_request GET '/api/v1/runs?limit=0'
step; expect_error 400 bad_request GET '/api/v1/runs?bogus=1'
step; expect_error 400 bad_request GET '/api/v1/runs?since=last-week'
step; expect_error 400 bad_request GET "/api/v1/runs?backend=x'%20OR%201=1--"
step; expect_error 400 bad_request GET "/api/v1/runs?model=%ff%fe"
step; expect_error 404 not_found GET "/api/v1/runs/$ID/layers/0.npy"
step; expect_error 404 not_found GET /api/v1/nothing
step; expect_error 405 method_not_allowed DELETE /api/v1/runs
step; expect_error 404 not_found POST /api/v1/models/no-such-model/baseline \
    -H "Authorization: Bearer $ADMIN" -H "$JSON" --data "{\"run\": \"$ID\"}"
step; expect_error 400 bad_json POST /api/v1/models/lenet-11-821/baseline \
    -H "Authorization: Bearer $ADMIN" -H "$JSON" --data '{"run": '

# ---- static paths ----
step; expect_error 400 bad_path GET /../../../etc/passwd --path-as-is
step; expect_error 400 bad_path GET /%2e%2e/%2e%2e/etc/passwd --path-as-is
step; expect_error 400 bad_path GET /.hidden
step; expect_error 404 not_found GET /no-such-file.js

db_dump > "$TMP/after.sql"
diff "$TMP/before.sql" "$TMP/after.sql" || fail "malformed requests changed the database"
expect 200 GET /healthz
ls -a "$TMP" | grep -q gpudiffd-spill && fail "a spill file was left behind"
[ "$count" -ge 25 ] || fail "only $count malformed requests"
server_stop
echo "server bad input: $count malformed requests refused, database unchanged"
