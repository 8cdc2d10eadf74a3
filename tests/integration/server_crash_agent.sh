#!/bin/sh
# kill -9 of gpudiffd while `gpudiff-agent push` uploads a bundle of eight 32 MiB layers: the
# daemon dies as soon as its log shows the first layer stored. With the daemon down:
# PRAGMA integrity_check is ok. A daemon started on another port shows no partial run to
# readers (no listing, 404 for the run and for a layer already stored), only to an agent
# asking for unfinished runs. Then the daemon starts again on the agent's port while the
# agent is still retrying: the agent completes the run, integrity_check and the foreign
# keys are still fine, no blob lacks a layer, and every tensor downloaded is, after its
# .npy header, byte for byte the data the bundle holds.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_numpy

mkdir "$TMP/dumps"
"$PYTHON_NUMPY" - "$TMP/dumps" <<'PY'
import sys
import numpy as np
rng = np.random.default_rng(821)
for i in range(8):
    # Activations' statistics, not noise: they compress (and take time) as real layers do.
    np.save("%s/layer%d.npy" % (sys.argv[1], i),
            rng.standard_normal((4096, 2048), dtype=np.float32))
PY
"$AGENT" bundle --from "$TMP/dumps" --out "$TMP/big" --model crash-big --backend import \
    >/dev/null
rm -rf "$TMP/dumps"
ID=$(jq -r .id "$TMP/big/run.json")
GPUDIFF_TOKEN=$(token agent)
export GPUDIFF_TOKEN
server_start
PORT=${URL##*:}

"$AGENT" push "$TMP/big" --server "$URL" --progress --retries 30 --retry-time 120 \
    >"$TMP/push.out" 2>"$TMP/push.err" &
PUSH=$!
tries=0
until grep -q "PUT /api/v1/runs/$ID/layers/0 201" "$SERVER_LOG"; do
    tries=$((tries + 1))
    [ "$tries" -le 3000 ] || fail "the first layer was not stored within 60 s"
    sleep 0.02
done
server_kill9
echo "killed after: $(grep -c "PUT /api/v1/runs/$ID/layers/[0-9]* 201" "$SERVER_LOG") layer(s)"

[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check after kill -9"
[ "$(sqlite3 "$DB" "SELECT state FROM runs WHERE id = '$ID'")" = uploading ] ||
    fail "the run is not left uploading"

# Another port: the agent cannot reach this one, so what readers see is looked at in peace.
server_start
expect 200 GET /api/v1/runs
[ "$(jq .total "$TMP/body")" = 0 ] || fail "an unfinished run is listed"
expect 404 GET "/api/v1/runs/$ID"
expect 404 GET "/api/v1/runs/$ID/layers/0.npy"
expect 200 GET "/api/v1/runs/$ID?include=uploading" -H "Authorization: Bearer $GPUDIFF_TOKEN"
[ "$(jq -r .state "$TMP/body")" = uploading ] || fail "state after the crash"
missing=$(jq '.layers_missing | length' "$TMP/body")
[ "$missing" -ge 1 ] || fail "no layer is missing after the crash"
echo "ok: after the crash $missing of 8 layers are missing and the run is invisible"
server_stop
kill -0 "$PUSH" 2>/dev/null || fail "the agent gave up while the daemon was down: $(cat "$TMP/push.err")"

server_start --listen "127.0.0.1:$PORT"
[ "${URL##*:}" = "$PORT" ] || fail "the daemon came back on ${URL##*:}, not $PORT"
wait "$PUSH" || fail "the agent did not complete (exit $?): $(cat "$TMP/push.err")"
cat "$TMP/push.err"
grep -q "retry 1 of 30" "$TMP/push.err" || fail "the agent never had to retry"
grep -q "is complete on the server" "$TMP/push.err" || fail "no completion message"
[ "$(cat "$TMP/push.out")" = "$ID" ] || fail "push printed $(cat "$TMP/push.out")"

[ "$(sqlite3 "$DB" 'PRAGMA integrity_check')" = ok ] || fail "integrity_check at the end"
[ -z "$(sqlite3 "$DB" 'PRAGMA foreign_key_check')" ] || fail "broken foreign keys"
orphans=$(sqlite3 "$DB" "SELECT count(*) FROM blobs WHERE sha256 NOT IN
    (SELECT blob_sha256 FROM layers WHERE blob_sha256 IS NOT NULL)")
[ "$orphans" = 0 ] || fail "$orphans blobs belong to no layer"
[ "$(sqlite3 "$DB" 'SELECT count(*) FROM blobs')" = 8 ] || fail "not 8 blobs"
expect 200 GET "/api/v1/runs/$ID"
[ "$(jq -r .state "$TMP/body")" = complete ] || fail "the run is not complete"

jq -r '.layers[] | "\(.index) \(.file)"' "$TMP/big/run.json" >"$TMP/files"
while read -r index file; do
    expect 200 GET "/api/v1/runs/$ID/layers/$index.npy"
    "$PYTHON_NUMPY" - "$TMP/body" "$TMP/big/$file" <<'PY' || fail "layer $index differs"
import sys
def data(path):
    b = open(path, "rb").read()
    assert b[:6] == b"\x93NUMPY", path
    head = 10 + int.from_bytes(b[8:10], "little") if b[6] == 1 else 12 + int.from_bytes(b[8:12], "little")
    return b[head:]
got, sent = data(sys.argv[1]), data(sys.argv[2])
sys.exit(0 if got == sent and len(sent) == 4096 * 2048 * 4 else 1)
PY
done <"$TMP/files"
server_stop
echo "server crash with the agent: ok"
