#!/bin/sh
# What the dashboard at scale reads from gpudiffd (issue 13): the run list's knob=, label=,
# q=, sort= and env filters and their refusals; the matrix's compute=none and row= and the
# matrix cache (a hit is byte for byte the answer that was stored; a new run of a device is a
# miss); GET /api/v1/ops with the engine's traits, GET /api/v1/knobs with its knobs. Three tiny framework bundles make the
# devices.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"

# ---- three devices of a two-layer model, the third with other values ----
need_numpy
mkdir "$TMP/arrays" "$TMP/arrays3"
"$PYTHON_NUMPY" - "$TMP" <<'PY' || fail "numpy could not write the arrays"
import sys
import numpy as np
t = sys.argv[1]
np.save(t + "/arrays/l1.npy", np.array([1, 2, 3, 4], np.float32))
np.save(t + "/arrays/l2.npy", np.array([0.5, 0.25, 0.125, 1], np.float32))
np.save(t + "/arrays3/l1.npy", np.array([1, 2, 3, 4.001], np.float32))
np.save(t + "/arrays3/l2.npy", np.array([0.5, 0.25, 0.125, 1.5], np.float32))
PY
bundle() { # bundle NAME ARRAYS GPU KNOBS-JSON
    "$AGENT" bundle --from "$TMP/$2" --out "$TMP/$1" --layers l1,l2 --op l1=Relu --op l2=Floor \
        --backend cuda --model tiny --env "gpu_name=$3" --env driver=560.35.03 \
        --label team=web >/dev/null || fail "bundle $1"
    jq --argjson k "$4" '.knobs = $k' "$TMP/$1/run.json" >"$TMP/$1.json" && mv "$TMP/$1.json" "$TMP/$1/run.json"
}
bundle d1 arrays 'GPU One' '{"tf32": true, "batch": 32}'
bundle d2 arrays 'GPU Two' '{"conv_algo": "autotune", "batch": null}'
bundle d3 arrays3 'GPU Three' '{}'
AGENT_TOKEN=$(token agent)
server_start
for b in d1 d2 d3; do
    GPUDIFF_TOKEN="$AGENT_TOKEN" "$AGENT" push "$TMP/$b" --server "$URL" >/dev/null || fail "push $b"
done
D1=$(jq -r .id "$TMP/d1/run.json")

# ---- the run list ----
total() { jq .total "$TMP/body"; }
expect 200 GET '/api/v1/runs?knob=tf32=true'
[ "$(total)" = 1 ] && [ "$(jq -r '.runs[0].id' "$TMP/body")" = "$D1" ] || fail "knob tf32=true: $(total)"
expect 200 GET '/api/v1/runs?knob=batch=32&knob=tf32=true&label=team=web&driver=560.35.03'
[ "$(total)" = 1 ] || fail "knob, label and driver together: $(total)"
expect 200 GET '/api/v1/runs?knob=batch=null'
[ "$(total)" = 1 ] || fail "knob batch=null: $(total)"
expect 200 GET '/api/v1/runs?knob=tf32=%22true%22'
[ "$(total)" = 0 ] || fail "knob tf32=\"true\" (a string) matched a boolean"
expect 200 GET '/api/v1/runs?q=gpu%20TWO%20conv_algo=auto'
[ "$(total)" = 1 ] || fail "search: $(total)"
expect 200 GET '/api/v1/runs?device=cuda%20GPU%20One%20tf32=on%20batch=32'
[ "$(total)" = 1 ] || fail "device key: $(total)"
[ "$(jq -c '.runs[0] | [.knobs.batch, .labels.team, .env.driver, .against_baseline]' "$TMP/body")" = '[32,"web","560.35.03",null]' ] ||
    fail "summary fields: $(jq -c '.runs[0]' "$TMP/body")"
expect 200 GET '/api/v1/runs?sort=gpu&order=asc'
[ "$(jq -r '[.runs[].gpu] | join(",")' "$TMP/body")" = "GPU One,GPU Three,GPU Two" ] || fail "sort by gpu"
expect_error 400 bad_request GET '/api/v1/runs?knob=tf32'
expect_error 400 bad_request GET '/api/v1/runs?knob=tf-32=true'
expect_error 400 bad_request GET '/api/v1/runs?label=%22=x'
expect_error 400 bad_request GET '/api/v1/runs?sort=size'
expect_error 400 bad_request GET '/api/v1/runs?order=up'
expect_error 400 bad_request GET '/api/v1/runs?q=1%202%203%204%205%206%207%208%209'
expect_error 400 bad_request GET '/api/v1/runs?knob=a=1&knob=a=1&knob=a=1&knob=a=1&knob=a=1&knob=a=1&knob=a=1&knob=a=1&knob=a=1'
expect_error 400 bad_request GET '/api/v1/runs?cudnn=%01'

# ---- the matrix: nothing computed yet, then row by row, then whole and cached ----
expect 200 GET '/api/v1/matrix?model=tiny&compute=none'
[ "$(jq '[.pending, ([.cells[][] | select(. == null)] | length)] | join(",")' "$TMP/body")" = '"6,6"' ] ||
    fail "compute=none: $(jq -c '{pending}' "$TMP/body")"
expect 200 GET '/api/v1/matrix?model=tiny&row=0'
[ "$(jq '[.row, (.cells | length), (.cells[0] | length), .pending] | join(",")' "$TMP/body")" = '"0,1,3,0"' ] ||
    fail "row=0: $(jq -c '{row, pending}' "$TMP/body")"
expect 200 GET '/api/v1/matrix?model=tiny&compute=none'
[ "$(jq .pending "$TMP/body")" = 4 ] || fail "after row 0: pending $(jq .pending "$TMP/body")"
expect_error 400 bad_request GET '/api/v1/matrix?model=tiny&row=3'
expect_error 400 bad_request GET '/api/v1/matrix?model=tiny&compute=some'
curl -sS -D "$TMP/h1" -o "$TMP/m1" "$URL/api/v1/matrix?model=tiny" || fail "matrix"
grep -qi '^x-cache: miss' "$TMP/h1" || fail "the first whole matrix is not a miss: $(cat "$TMP/h1")"
[ "$(jq .pending "$TMP/m1")" = 0 ] || fail "the whole matrix has pending cells"
curl -sS -D "$TMP/h2" -o "$TMP/m2" "$URL/api/v1/matrix?model=tiny" || fail "matrix"
grep -qi '^x-cache: hit' "$TMP/h2" || fail "the second load is not served from the matrix cache"
cmp -s "$TMP/m1" "$TMP/m2" || fail "the cached matrix differs from the one computed"
echo "ok: the whole matrix is cached and served byte for byte"
# A new run of device 3: another signature, made again (its new pairs computed). created_at
# counts seconds: the new run must be the newer one.
sleep 1
bundle d3b arrays3 'GPU Three' '{}'
GPUDIFF_TOKEN="$AGENT_TOKEN" "$AGENT" push "$TMP/d3b" --server "$URL" >/dev/null || fail "push d3b"
curl -sS -D "$TMP/h3" -o "$TMP/m3" "$URL/api/v1/matrix?model=tiny" || fail "matrix"
grep -qi '^x-cache: miss' "$TMP/h3" || fail "a new run of a device still hit the matrix cache"
jq -e --arg r "$(jq -r .id "$TMP/d3b/run.json")" '[.devices[].run] | index($r) != null' "$TMP/m3" >/dev/null ||
    fail "the new run is not in the matrix"
echo "ok: a device's new run makes the matrix again"

# ---- the op traits ----
expect 200 GET /api/v1/ops
[ "$(jq -c '[.ops[] | select(.name == "Floor" or .name == "Log" or .name == "Conv") |
    [.name, .discontinuous, .ill_conditioned, .reduction]]' "$TMP/body")" = \
    '[["Conv",false,false,"conv"],["Floor",true,false,"none"],["Log",false,true,"none"]]' ] ||
    fail "ops: $(jq -c '.ops[0:3]' "$TMP/body")"
n_def=$(grep -c '^GD_OP(' "$GD_SRCDIR/engine/core/ops.def")
[ "$(jq '.ops | length' "$TMP/body")" = "$n_def" ] || fail "ops: not the $n_def of ops.def"
echo "ok: GET /api/v1/ops lists the $n_def ops of ops.def with their traits"

# ---- the knob table (front, issue 23) ----
expect 200 GET /api/v1/knobs
grep -o '^GD_KNOB( *[A-Z_0-9]*, *[a-z_0-9]*' "$GD_SRCDIR/engine/core/knobs.def" | sed 's/.*, *//' \
    >"$TMP/knob_names.txt"
[ "$(jq -r '.knobs[].name' "$TMP/body")" = "$(cat "$TMP/knob_names.txt")" ] ||
    fail "knobs: $(jq -c '[.knobs[].name]' "$TMP/body") are not knobs.def's"
[ "$(jq -c '.knobs[] | select(.name == "tf32") | [.flag, .values, .default, .backends, .category]' \
    "$TMP/body")" = '["--tf32","on|off","off",["cuda"],"arithmetic"]' ] ||
    fail "knobs: tf32 is $(jq -c '.knobs[] | select(.name == "tf32")' "$TMP/body")"
echo "ok: GET /api/v1/knobs lists the $(wc -l <"$TMP/knob_names.txt") knobs of knobs.def"
server_stop
