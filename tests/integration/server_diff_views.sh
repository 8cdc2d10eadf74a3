#!/bin/sh
# What the dashboard at LLM depth and fleet width reads from gpudiffd (issue 26): a diff's
# summary and its pages of rows (made once from the cached diff: X-Cache miss, then hit),
# filtered by verdict, op and name; the graph's nodes and edges; the overlay of runs against
# one truth and the heatmap of a model's devices, their bins; each run's standing against its
# baseline and a truth; the matrix's devices with their facts and their output's NaN counts;
# and the refusals of every parameter. Tiny framework bundles of a three-layer model, one
# device's output holding NaN and another its bitwise twin.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"

need_numpy
mkdir "$TMP/a1" "$TMP/a2" "$TMP/a3"
"$PYTHON_NUMPY" - "$TMP" <<'PY' || fail "numpy could not write the arrays"
import sys
import numpy as np
t = sys.argv[1]
x = np.array([1, 2, 3, 4], np.float32)
for d, (k1, k2) in {"a1": (1, 1), "a2": (1.0005, 1.1), "a3": (1, 1)}.items():
    np.save(f"{t}/{d}/blk.0.dense.npy", x * np.float32(k1))
    np.save(f"{t}/{d}/blk.0.relu.npy", np.maximum(x * np.float32(k1), 0))
    out = x * np.float32(k2)
    if d == "a3":
        out[1] = np.nan
    np.save(f"{t}/{d}/out_proj.npy", out)
PY
bundle() { # bundle NAME ARRAYS GPU DRIVER
    "$AGENT" bundle --from "$TMP/$2" --out "$TMP/$1" --layers blk.0.dense,blk.0.relu,out_proj \
        --op blk.0.dense=Gemm --op blk.0.relu=Relu --op out_proj=Gemm --backend cuda --model deep3 \
        --env "gpu_name=$3" --env "driver=$4" --label "rack=$1" >/dev/null || fail "bundle $1"
}
bundle d1 a1 'GPU One' 550.54.15
bundle d2 a2 'GPU Two' 560.35.03
bundle n1 a3 'GPU Three' 560.35.03
bundle n2 a3 'GPU Four' 560.35.03 # the bitwise twin of n1, NaN included
AGENT_TOKEN=$(token agent)
server_start
for b in d1 d2 n1 n2; do
    GPUDIFF_TOKEN="$AGENT_TOKEN" "$AGENT" push "$TMP/$b" --server "$URL" >/dev/null || fail "push $b"
done
id() { jq -r .id "$TMP/$1/run.json"; }
D1=$(id d1) D2=$(id d2) N1=$(id n1) N2=$(id n2)
Q="a=$D1&b=$D2"

# ---- the summary: made once, then read ----
curl -sS -D "$TMP/h1" -o "$TMP/s1" "$URL/api/v1/diff/summary?$Q" || fail "summary"
grep -qi '^x-cache: miss' "$TMP/h1" || fail "a first summary is not a miss: $(cat "$TMP/h1")"
curl -sS -D "$TMP/h2" -o "$TMP/s2" "$URL/api/v1/diff/summary?$Q" || fail "summary"
grep -qi '^x-cache: hit' "$TMP/h2" || fail "a second summary is not a hit"
cmp -s "$TMP/s1" "$TMP/s2" || fail "the stored summary is not the one made"
expect 200 GET "/api/v1/diff?$Q"
cp "$TMP/body" "$TMP/full"
# independently of the daemon's view: the counts and letters from the whole diff
letters=$(jq -r '[.layers[].verdict | {identical: "i", noise: "n", divergent: "d", amplified: "a",
    nonfinite: "f", incomparable: "x"}[.] // "u"] | join("")' "$TMP/full")
[ "$(jq -r .overview.verdicts "$TMP/s1")" = "$letters" ] || fail "overview letters: $(jq -r .overview.verdicts "$TMP/s1"), want $letters"
[ "$(jq .n_layers "$TMP/s1")" = "$(jq '.layers | length' "$TMP/full")" ] || fail "n_layers"
[ "$(jq -r .first_divergent "$TMP/s1")" = "$(jq -r .first_divergent "$TMP/full")" ] || fail "first divergent"
[ "$(jq -r '.runs.a.id, .runs.b.backend, .runs.a.n_layers' "$TMP/s1" | tr '\n' ' ')" = "$D1 cuda 3 " ] ||
    fail "the runs' documents: $(jq -c .runs.a "$TMP/s1")"
fd=$(jq -r .first_divergent "$TMP/full")
[ "$(jq --arg n "$fd" '.layers[$n].i' "$TMP/s1")" = "$(jq --arg n "$fd" '[.layers[].name] | index($n)' "$TMP/full")" ] ||
    fail "the first divergent layer is named in full with its position"
echo "ok: the summary, made once from the diff ($(wc -c <"$TMP/s1") bytes against $(wc -c <"$TMP/full"))"

# ---- pages of rows ----
expect 200 GET "/api/v1/diff/layers?$Q&offset=1&limit=5"
[ "$(jq -c '[.total, .offset, .limit, [.layers[].i], [.layers[].name]]' "$TMP/body")" = \
    '[3,1,5,[1,2],["blk.0.relu","out_proj"]]' ] || fail "a page: $(jq -c '[.total, [.layers[].name]]' "$TMP/body")"
# a row is the diff's layer, its numbers to 9 significant digits
jq -e --argjson want "$(jq '.layers[2].max_abs' "$TMP/full")" \
    '(.layers[1].max_abs - $want) | (if . < 0 then -. else . end) <= 1e-8 * $want' "$TMP/body" >/dev/null ||
    fail "a row is the diff's layer: $(jq -c '.layers[1].max_abs' "$TMP/body")"
expect 200 GET "/api/v1/diff/layers?$Q&op=Gemm"
[ "$(jq -c '[.total, [.layers[].name]]' "$TMP/body")" = '[2,["blk.0.dense","out_proj"]]' ] || fail "op=Gemm"
expect 200 GET "/api/v1/diff/layers?$Q&q=BLK.0"
[ "$(jq .total "$TMP/body")" = 2 ] || fail "q=BLK.0 (any case): $(jq .total "$TMP/body")"
expect 200 GET "/api/v1/diff/layers?$Q&q=_"
[ "$(jq -c '[.layers[].name]' "$TMP/body")" = '["out_proj"]' ] || fail "q=_ is an underscore, no wildcard"
expect 200 GET "/api/v1/diff/layers?$Q&name=out_proj&verdict=$(jq -r '.layers[2].verdict' "$TMP/full")"
[ "$(jq .total "$TMP/body")" = 1 ] || fail "name and verdict"
expect 200 GET "/api/v1/diff/layers?$Q&q="
[ "$(jq .total "$TMP/body")" = 3 ] || fail "an empty q matches every name"
echo "ok: pages of rows, filtered by op, part of a name, name and verdict"
expect_error 400 bad_request GET "/api/v1/diff/layers?$Q&limit=0"
expect_error 400 bad_request GET "/api/v1/diff/layers?$Q&limit=1001"
expect_error 400 bad_request GET "/api/v1/diff/layers?$Q&offset=-1"
expect_error 400 bad_request GET "/api/v1/diff/layers?$Q&verdict=bad"
expect_error 400 bad_request GET "/api/v1/diff/layers?$Q&op=Ge%20mm"
expect_error 400 bad_request GET "/api/v1/diff/layers?$Q&q=%25"
expect_error 400 bad_request GET "/api/v1/diff/layers?$Q&extra=1"
expect_error 400 bad_request GET "/api/v1/diff/summary?a=$D1"
expect_error 400 bad_request GET "/api/v1/diff/summary?a=$D1&b=x"
expect_error 404 not_found GET "/api/v1/diff/summary?a=$D1&b=00000000-0000-4000-8000-000000000000"

# ---- the graph ----
expect 200 GET "/api/v1/diff/graph?$Q"
[ "$(jq -c '[.nodes, .names, .verdicts, (.edges | length), .edges_from]' "$TMP/body")" = \
    "[3,[\"blk.0.dense\",\"blk.0.relu\",\"out_proj\"],\"$letters\",0,null]" ] ||
    fail "graph: $(jq -c . "$TMP/body")"
echo "ok: the graph's nodes (a framework dump records no edges)"

# ---- the matrix's devices: their facts, NaN in their output ----
expect 200 GET '/api/v1/matrix?model=deep3'
jq -e --arg n1 "$N1" --arg n2 "$N2" --arg d1 "$D1" '
    (.devices[] | select(.run == $n1) | .nonfinite.nan == 1 and .env.driver == "560.35.03" and .labels.rack == "n1") and
    (.devices[] | select(.run == $n2) | .nonfinite.nan == 1) and
    (.devices[] | select(.run == $d1) | .nonfinite == {"nan": 0, "inf": 0})' "$TMP/body" >/dev/null ||
    fail "matrix devices: $(jq -c '.devices' "$TMP/body")"
i1=$(jq --arg r "$N1" '[.devices[].run] | index($r)' "$TMP/body")
i2=$(jq --arg r "$N2" '[.devices[].run] | index($r)' "$TMP/body")
[ "$(jq -c ".cells[$i1][$i2] | [.verdict, .err]" "$TMP/body")" = '["identical",0]' ] ||
    fail "the twins' cell: $(jq -c ".cells[$i1][$i2]" "$TMP/body")"
echo "ok: the twins' cell is identical and 0, and both devices say NaN in their output"

# ---- the overlay: runs against one truth ----
expect 200 GET "/api/v1/overlay?truth=$D1&runs=$D2,$N1&points=10"
[ "$(jq -c '[.n_layers, .bin, (.series | length), .series[0].run.id, .truth.id]' "$TMP/body")" = \
    "[3,1,2,\"$D2\",\"$D1\"]" ] || fail "overlay: $(jq -c '[.n_layers, .bin]' "$TMP/body")"
expect 200 GET "/api/v1/diff?a=$D2&b=$D1"
e_diff=$(jq '.layers[2].err' "$TMP/body")
expect 200 GET "/api/v1/overlay?truth=$D1&runs=$D2"
"$PYTHON_NUMPY" -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(a - b) > 1e-3 * abs(b))" \
    "$(jq '.series[0].err[2]' "$TMP/body")" "$e_diff" || fail "overlay err is not the diff's ($e_diff)"
echo "ok: the overlay's figures are the diffs' against the truth"
expect_error 400 bad_request GET "/api/v1/overlay?truth=$D1"
expect_error 400 bad_request GET "/api/v1/overlay?truth=$D1&runs=$D2,$D2"
expect_error 400 bad_request GET "/api/v1/overlay?truth=$D1&runs=$D1"
expect_error 400 bad_request GET "/api/v1/overlay?truth=$D1&runs=$D2&points=5"
expect_error 400 bad_request GET "/api/v1/overlay?runs=$D2"
expect_error 404 not_found GET "/api/v1/overlay?truth=$D1&runs=00000000-0000-4000-8000-000000000000"

# ---- the heatmap: no baseline, then against one ----
expect_error 409 conflict GET '/api/v1/heatmap?model=deep3'
expect 200 GET "/api/v1/heatmap?model=deep3&ref=$D1&points=10"
[ "$(jq -c '[.n_layers, (.series | length), .ref.id]' "$TMP/body")" = "[3,4,\"$D1\"]" ] ||
    fail "heatmap: $(jq -c '[.n_layers, (.series | length)]' "$TMP/body")"
jq -e --arg d1 "$D1" '.series[] | select(.run.id == $d1) | .verdicts == "iii" and .err == [0, 0, 0]' \
    "$TMP/body" >/dev/null || fail "the reference's own row is identical"
expect_error 404 not_found GET '/api/v1/heatmap?model=no-such-model'
expect_error 400 bad_request GET '/api/v1/heatmap?model=deep3&ref=x'
echo "ok: the heatmap of the devices against a reference"

# ---- standing: against the baseline (none yet) and a truth ----
expect 200 GET "/api/v1/standing?runs=$D2,$D1&truth=$D1"
[ "$(jq -c '[.runs[0].baseline, .runs[0].truth.state, .runs[0].truth.against, .runs[1].truth.state]' "$TMP/body")" = \
    "[null,\"compared\",\"$D1\",\"truth\"]" ] || fail "standing: $(jq -c . "$TMP/body")"
expect 200 GET "/api/v1/standing?runs=$D2&truth=auto"
[ "$(jq -c '.runs[0].truth' "$TMP/body")" = null ] || fail "truth=auto without a cpu64 run"
expect_error 400 bad_request GET "/api/v1/standing?runs=$D2,x"
expect_error 400 bad_request GET "/api/v1/standing?runs=$D2&truth=best"
expect_error 400 bad_request GET '/api/v1/standing'
echo "ok: standing against a truth"
server_stop
