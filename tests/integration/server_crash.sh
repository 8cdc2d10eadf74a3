#!/bin/sh
# kill -9 of gpudiffd in the middle of uploads: the two 24 MB layers of the seed run are on
# their way (slowed down by curl) while the small ones are done. After a restart on the same
# file: PRAGMA integrity_check is ok, no foreign key is broken, the run is visible to no
# reader, it lacks exactly the cut layers, no blob is left without a layer and no spill file
# without an upload. Then the layers are sent again with curl, the run is finished, and
# every downloaded .npy is byte for byte the file sent.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed

seed_bundle "$TMP/seed"
ID=$(jq -r .id "$TMP/seed/run.json")
jq -r '.layers[] | "\(.index) \(.file)"' "$TMP/seed/run.json" > "$TMP/files"
AGENT_TOKEN=$(token agent)
A="Authorization: Bearer $AGENT_TOKEN"
server_start

expect 201 POST /api/v1/runs -H "$A" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/seed/run.json"
while read -r index file; do
    [ "$index" -ge 2 ] || continue
    expect 201 PUT "/api/v1/runs/$ID/layers/$index" -H "$A" -T "$TMP/seed/$file"
done < "$TMP/files"

# Layers 0 and 1 at 2 MB/s each: 12 s apiece, and the daemon dies after 2.
for index in 0 1; do
    file=$(sed -n "$((index + 1))s/^[0-9]* //p" "$TMP/files")
    curl -sS -o /dev/null --limit-rate 2M -X PUT -H "$A" -T "$TMP/seed/$file" \
        "$URL/api/v1/runs/$ID/layers/$index" 2>/dev/null &
done
sleep 2
grep -q "layers/0 " "$SERVER_LOG" && fail "layer 0 finished before the kill: too fast to test"
server_kill9
wait || true

[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after kill -9"
server_start
[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after restart"
[ -z "$(sqlite3 "$DB" 'PRAGMA foreign_key_check')" ] || fail "broken foreign keys"

# Not visible as a run to readers; the agent sees what is missing.
expect 200 GET /api/v1/runs
[ "$(jq .total "$TMP/body")" = 0 ] || fail "an unfinished run is listed"
expect 404 GET "/api/v1/runs/$ID"
expect 404 GET "/api/v1/runs/$ID/layers/5.npy"
expect 200 GET "/api/v1/runs/$ID?include=uploading" -H "$A"
[ "$(jq -c .layers_missing "$TMP/body")" = "[0,1]" ] ||
    fail "missing after the crash: $(jq -c .layers_missing "$TMP/body")"
[ "$(jq -r .state "$TMP/body")" = uploading ] || fail "state after the crash"
orphans=$(sqlite3 "$DB" "SELECT count(*) FROM blobs WHERE sha256 NOT IN
    (SELECT blob_sha256 FROM layers WHERE blob_sha256 IS NOT NULL)")
[ "$orphans" = 0 ] || fail "$orphans blobs belong to no layer"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM layers WHERE uploaded_at IS NOT NULL')" = 10 ] ||
    fail "the cut uploads left layer rows"
ls -a "$TMP" | grep -q gpudiffd-spill && fail "a spill file survived"

# The agent's part, done here with curl: send everything again, finish, read it back.
while read -r index file; do
    want=200
    [ "$index" -ge 2 ] || want=201
    expect "$want" PUT "/api/v1/runs/$ID/layers/$index" -H "$A" -T "$TMP/seed/$file"
done < "$TMP/files"
expect 200 POST "/api/v1/runs/$ID/finish" -H "$A"
while read -r index file; do
    expect 200 GET "/api/v1/runs/$ID/layers/$index.npy"
    cmp "$TMP/body" "$TMP/seed/$file" || fail "layer $index differs from what was sent"
done < "$TMP/files"

# A second kill -9 amid a burst of requests: a new run (its tensors known, so linked at once)
# created and finished, run 1's layers sent again and downloaded.
jq '.id = "55555555-5555-4555-8555-555555555555"' "$TMP/seed/run.json" > "$TMP/run2.json"
ID2=55555555-5555-4555-8555-555555555555
(
    while :; do
        curl -s -o /dev/null -H "$A" -H 'Content-Type: application/json' \
            --data-binary @"$TMP/run2.json" "$URL/api/v1/runs" || exit 0
        curl -s -o /dev/null -X POST -H "$A" "$URL/api/v1/runs/$ID2/finish" || exit 0
        curl -s -o /dev/null -X PUT -H "$A" -T "$TMP/seed/layers/0002-maxpool1.npy" \
            "$URL/api/v1/runs/$ID/layers/2" || exit 0
        curl -s -o /dev/null "$URL/api/v1/runs/$ID/layers/2.npy" || exit 0
    done
) &
sleep 1
server_kill9
wait || true
[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after 2nd kill"
server_start
[ -z "$(sqlite3 "$DB" 'PRAGMA foreign_key_check')" ] || fail "broken foreign keys (2nd kill)"
st=$(api POST /api/v1/runs -H "$A" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/run2.json")
case "$st" in 200|201) ;; *) fail "POST run 2 after the 2nd kill: $st" ;; esac
expect 200 POST "/api/v1/runs/$ID2/finish" -H "$A"
expect 200 GET /api/v1/runs
[ "$(jq .total "$TMP/body")" = 2 ] || fail "runs after the 2nd kill: $(cat "$TMP/body")"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')" = \
  "$(jq '[.layers[].sha256] | unique | length' "$TMP/seed/run.json")" ] ||
    fail "blobs after the 2nd kill"
for run in "$ID" "$ID2"; do
    while read -r index file; do
        expect 200 GET "/api/v1/runs/$run/layers/$index.npy"
        cmp "$TMP/body" "$TMP/seed/$file" || fail "run $run layer $index differs"
    done < "$TMP/files"
done
server_stop
echo "server crash: ok"
