#!/bin/sh
# Fingerprints first, tensors on demand (issue 14 items 2 and 3; docs/SERVER.md, "Fingerprints
# and fetched layers"). A generated model of 500 layers (layer i = input x weight i, each
# reading the input only, so a difference stays in its layer) is run by two agents with
# --capture fingerprint and weights that differ in exactly three layers (m100, m250, m400:
# 1 % larger). The daemon's diff judges every layer from the fingerprints: the 497 others
# identical by their hashes, the three divergent from their samples (marked sampled, max |a-b|
# a lower bound of numpy's); it asks each run for those
# three layers and no other. A tensor whose BLAKE3 is not the fingerprint's is refused.
# `gpudiff-agent fetch-layers` computes them again and sends them; the next diff measures
# those three in full (not sampled, divergent, the exact max |a-b| the numbers give) while
# the rest stays fingerprint-identical, and no request is left open.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_numpy

ADMIN_TOKEN=$(token admin)
AGENT_TOKEN=$(token agent)
admin="Authorization: Bearer $ADMIN_TOKEN"
server_start
GPUDIFF_TOKEN=$AGENT_TOKEN
export GPUDIFF_TOKEN

# The model and two weight sets; max_abs.txt: the exact max |a-b| of each changed layer in
# float32, computed by numpy from the same numbers.
"$PYTHON_NUMPY" - "$TMP" <<'PY'
import json, os, sys
import numpy as np
d = sys.argv[1]
n, changed = 500, (100, 250, 400)
rng = np.random.default_rng(14)
x = rng.uniform(-1, 1, (8, 512)).astype(np.float32)
w = {"w%03d" % i: rng.uniform(0.5, 1.5, 512).astype(np.float32) for i in range(n)}
wb = dict(w)
for i in changed:
    wb["w%03d" % i] = (w["w%03d" % i] * np.float32(1.01)).astype(np.float32)
for name, ws in (("a", w), ("b", wb)):
    os.makedirs(os.path.join(d, "w_" + name))
    np.savez(os.path.join(d, "w_" + name, "w.npz"), **ws)
np.save(os.path.join(d, "x.npy"), x)
model = {
    "format": "gpudiff-model", "version": 1, "name": "fp500",
    "inputs": [{"name": "x", "dtype": "float32", "shape": [8, 512]}],
    "outputs": ["m%03d" % i for i in range(n)],
    "weights": [{"name": "w%03d" % i, "file": "w.npz", "key": "w%03d" % i,
                 "dtype": "float32", "shape": [512]} for i in range(n)],
    "nodes": [{"name": "m%03d" % i, "op": "Mul", "inputs": ["x", "w%03d" % i]}
              for i in range(n)],
}
json.dump(model, open(os.path.join(d, "model.json"), "w"))
with open(os.path.join(d, "max_abs.txt"), "w") as f:
    for i in changed:
        k = "w%03d" % i
        f.write("m%03d %.17g\n" % (i, np.abs(x * wb[k] - x * w[k]).astype(np.float64).max()))
PY

agent_run() {
    name=$1
    "$AGENT" run --model "$TMP/model.json" --weights-dir "$TMP/w_$name" --input "$TMP/x.npy" \
        --capture fingerprint --out "$TMP/$name" --server "$URL" >/dev/null 2>"$TMP/$name.err" ||
        fail "agent run $name: exit $?: $(cat "$TMP/$name.err")"
    grep -q "is complete on the server" "$TMP/$name.err" || fail "run $name: $(cat "$TMP/$name.err")"
}
agent_run a
agent_run b
A=$(jq -r .id "$TMP/a/run.json")
B=$(jq -r .id "$TMP/b/run.json")
[ "$(jq '[.layers[] | select(.file)] | length' "$TMP/a/run.json")" = 0 ] ||
    fail "a fingerprint run holds no tensor file"
[ "$(jq '[.layers[] | select(.fingerprint.blake3)] | length' "$TMP/a/run.json")" = 500 ] ||
    fail "every layer has its fingerprint"
[ ! -d "$TMP/a/layers" ] || [ -z "$(ls "$TMP/a/layers")" ] || fail "no .npy in a fingerprint bundle"

# ---- the diff from fingerprints, and what the daemon asks for ----
expect 200 GET "/api/v1/diff?a=$A&b=$B" -H "$admin"
cp "$TMP/body" "$TMP/diff1.json"
[ "$(jq '.layers | length' "$TMP/diff1.json")" = 500 ] || fail "500 layers: $(head -c 300 "$TMP/diff1.json")"
[ "$(jq -c '[.layers[] | select(.verdict != "identical") | .name]' "$TMP/diff1.json")" = \
    '["m100","m250","m400"]' ] ||
    fail "three layers differ: $(jq -c '[.layers[] | select(.verdict != "identical") | [.name, .verdict]]' "$TMP/diff1.json")"
# equal hashes are conclusive (identical, not sampled); the three are judged from samples
[ "$(jq -c '[.layers[] | select(.sampled == true) | .name]' "$TMP/diff1.json")" = \
    '["m100","m250","m400"]' ] || fail "the three are judged from their samples"
[ "$(jq '[.layers[] | select(.verdict == "identical" and .bitwise_equal)] | length' \
    "$TMP/diff1.json")" = 497 ] || fail "497 layers identical by their hashes"
[ "$(jq -c '[.layers[] | select(.fetch) | .fetch]' "$TMP/diff1.json")" = \
    '[["a","b"],["a","b"],["a","b"]]' ] || fail "both sides of the three are worth fetching"
[ "$(jq -c '[.layers[] | select(.verdict == "divergent") | .name]' "$TMP/diff1.json")" = \
    '["m100","m250","m400"]' ] || fail "the three are divergent from their samples"
[ "$(jq -r .first_divergent "$TMP/diff1.json")" = m100 ] || fail "first divergent is m100"
# the sampled max |a-b| is a lower bound of the true one
while read -r name exact; do
    lb=$(jq -r --arg n "$name" '.layers[] | select(.name == $n) | .max_abs' "$TMP/diff1.json")
    awk -v lb="$lb" -v ex="$exact" 'BEGIN { exit !(lb > 0 && lb <= ex) }' ||
        fail "$name: sampled max |a-b| $lb is not a lower bound of $exact"
done <"$TMP/max_abs.txt"
for run in "$A" "$B"; do
    expect 200 GET "/api/v1/runs/$run/requests" -H "$admin"
    [ "$(jq -c .pending "$TMP/body")" = '[100,250,400]' ] ||
        fail "run $run: the daemon asks for the three layers only: $(cat "$TMP/body")"
done

# ---- a tensor that is not the fingerprinted one is refused, nothing is stored ----
"$AGENT" fetch-layers --server "$URL" "$B" --keep "$TMP/b_again" >"$TMP/fetch_b.out" \
    2>"$TMP/fetch_b.err" || fail "fetch-layers b: exit $?: $(cat "$TMP/fetch_b.err")"
expect 400 PUT "/api/v1/runs/$A/layers/100" -H "Authorization: Bearer $AGENT_TOKEN" \
    -H 'Content-Type: application/octet-stream' --data-binary "@$TMP/b_again/layers/0100-m100.npy"
jq -e '.error.code == "hash_mismatch" and (.error.message | test("BLAKE3"))' "$TMP/body" \
    >/dev/null || fail "the refusal names the hash: $(cat "$TMP/body")"
expect 200 GET "/api/v1/runs/$A/requests" -H "$admin"
[ "$(jq -c .pending "$TMP/body")" = '[100,250,400]' ] || fail "a's requests stay open"

# ---- the agent fulfils them ----
"$AGENT" fetch-layers --server "$URL" "$A" >"$TMP/fetch_a.out" 2>"$TMP/fetch_a.err" ||
    fail "fetch-layers a: exit $?: $(cat "$TMP/fetch_a.err")"
for f in fetch_a fetch_b; do
    [ "$(cat "$TMP/$f.out")" = "layer 100 m100: sent
layer 250 m250: sent
layer 400 m400: sent" ] || fail "$f sends the three layers: $(cat "$TMP/$f.out" "$TMP/$f.err")"
done
for run in "$A" "$B"; do
    expect 200 GET "/api/v1/runs/$run/requests" -H "$admin"
    [ "$(jq -c .pending "$TMP/body")" = '[]' ] || fail "run $run: requests fulfilled: $(cat "$TMP/body")"
    [ "$(jq '[.requests[] | select(.fulfilled_at != null)] | length' "$TMP/body")" = 3 ] ||
        fail "run $run: three fulfilled requests"
    expect 200 GET "/api/v1/runs/$run" -H "$admin"
    [ "$(jq -c '[.layers[] | select(.present) | .index]' "$TMP/body")" = '[100,250,400]' ] ||
        fail "run $run: the three tensors are stored, no other"
done
"$AGENT" fetch-layers --server "$URL" "$A" >"$TMP/fetch_a2.out" 2>"$TMP/fetch_a2.err" ||
    fail "a second fetch-layers: exit $?"
[ ! -s "$TMP/fetch_a2.out" ] && grep -q "no layer is asked for" "$TMP/fetch_a2.err" ||
    fail "nothing is left to send: $(cat "$TMP/fetch_a2.out" "$TMP/fetch_a2.err")"

# ---- the diff again: the three in full, the rest fingerprint-identical ----
expect 200 GET "/api/v1/diff?a=$A&b=$B" -H "$admin"
cp "$TMP/body" "$TMP/diff2.json"
[ "$(jq -c '[.layers[] | select(.verdict != "identical") | [.name, .verdict, .sampled, .count,
    .values_differ]]' "$TMP/diff2.json")" = \
    '[["m100","divergent",false,4096,4096],["m250","divergent",false,4096,4096],["m400","divergent",false,4096,4096]]' ] ||
    fail "the three are measured in full: $(jq -c '[.layers[] | select(.verdict != "identical")]' "$TMP/diff2.json" | head -c 400)"
# their tensors are not stored (above): identical from the fingerprints' hashes
[ "$(jq '[.layers[] | select(.verdict == "identical" and .bitwise_equal)] | length' \
    "$TMP/diff2.json")" = 497 ] || fail "the 497 others stay fingerprint-identical"
[ "$(jq '[.layers[] | select(.fetch)] | length' "$TMP/diff2.json")" = 0 ] ||
    fail "nothing more is worth fetching"
while read -r name exact; do
    got=$(jq -r --arg n "$name" '.layers[] | select(.name == $n) | .max_abs' "$TMP/diff2.json")
    awk -v g="$got" -v ex="$exact" 'BEGIN { d = g - ex; exit !(d < 1e-6 * ex && -d < 1e-6 * ex) }' ||
        fail "$name: max |a-b| in full is $got, numpy says $exact"
done <"$TMP/max_abs.txt"

# ---- by hand: the dashboard's "fetch this layer" ----
expect 201 POST "/api/v1/runs/$A/requests" -H "Authorization: Bearer $AGENT_TOKEN" \
    -H 'Content-Type: application/json' --data '{"index": 7}'
[ "$(jq -c .pending "$TMP/body")" = '[7]' ] || fail "a request by hand: $(cat "$TMP/body")"
expect 200 POST "/api/v1/runs/$A/requests" -H "Authorization: Bearer $AGENT_TOKEN" \
    -H 'Content-Type: application/json' --data '{"index": 100}'
[ "$(jq .added "$TMP/body")" = false ] || fail "a layer already here is not asked for"
expect 404 POST "/api/v1/runs/$A/requests" -H "Authorization: Bearer $AGENT_TOKEN" \
    -H 'Content-Type: application/json' --data '{"index": 500}'
expect 400 POST "/api/v1/runs/$A/requests" -H "Authorization: Bearer $AGENT_TOKEN" \
    -H 'Content-Type: application/json' --data '{"index": "x"}'
echo "ok: 500 layers, 3 asked for and fetched, diff in full there, identical elsewhere"
