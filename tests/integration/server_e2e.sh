#!/bin/sh
# End to end on loopback: a daemon on a fresh database; three agents (cpu, cpu64, cpu with
# TF32 emulated on the GEMMs) run the seed case with --server and upload as they finish.
# GET /api/v1/diff gives, layer by layer, the verdicts `gpudiff-agent diff` gives on the same
# bundles, the same first divergent layer, amplifiers and (with a truth run) the side closer
# to it; a second read is served from the cache byte for byte. With cpu64 as the baseline,
# the matrix holds the three devices and 9 cells that agree with /diff, and history of fc2
# holds the three runs with their env. A run finished after the baseline is compared with
# it by the worker, unasked. A run whose tensors retention dropped before it was compared is
# left out of the matrix and history (410 for a new diff of it), the rest still answers. A
# refused token ends an agent with exit 9 and the server's text. The runs' noise probes reach
# the daemon's diffs.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed

ADMIN_TOKEN=$(token admin)
AGENT_TOKEN=$(token agent)
admin="Authorization: Bearer $ADMIN_TOKEN"
server_start
MODEL=lenet-11-821

# The token from the environment, as docs/AGENT.md recommends.
GPUDIFF_TOKEN=$AGENT_TOKEN
export GPUDIFF_TOKEN
agent_run() {
    name=$1
    shift
    "$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$SEED_DIR/input.npz" --input-key inp --out "$TMP/$name" \
        --server "$URL" "$@" >/dev/null 2>"$TMP/$name.err" ||
        fail "agent run $name: exit $?: $(cat "$TMP/$name.err")"
    grep -q "is complete on the server" "$TMP/$name.err" || fail "run $name: $(cat "$TMP/$name.err")"
}
agent_run cpu
agent_run cpu64 --backend cpu64
agent_run tf32 --emulate tf32
CPU=$(jq -r .id "$TMP/cpu/run.json")
CPU64=$(jq -r .id "$TMP/cpu64/run.json")
TF32=$(jq -r .id "$TMP/tf32/run.json")
expect 200 GET "/api/v1/runs?model=$MODEL"
[ "$(jq .total "$TMP/body")" = 3 ] || fail "three complete runs: $(cat "$TMP/body")"

# ---- the daemon's diff against the agent's, on the same bundles ----
# What must agree: first divergent, amplifiers, each layer's name and verdict, the side
# closer to the truth; max |a-b| to the 6 digits the agent prints.
facts='[.first_divergent, .amplifiers, [.layers[] | [.name, .verdict, (.truth.closer // null)]]]'
same_diff() {
    label=$1 a=$2 b=$3 qa=$4 qb=$5
    truth_dir=${6:-} truth_id=${7:-}
    if [ -n "$truth_dir" ]; then
        "$AGENT" diff "$TMP/$a" "$TMP/$b" --truth "$TMP/$truth_dir" --json >"$TMP/agent.json"
        truth_q="&truth=$truth_id"
    else
        "$AGENT" diff "$TMP/$a" "$TMP/$b" --json >"$TMP/agent.json"
        truth_q=""
    fi
    expect 200 GET "/api/v1/diff?a=$qa&b=$qb$truth_q"
    cp "$TMP/body" "$TMP/server_$label.json"
    jq -c "$facts" "$TMP/agent.json" >"$TMP/agent_facts"
    jq -c "$facts" "$TMP/body" >"$TMP/server_facts"
    cmp -s "$TMP/agent_facts" "$TMP/server_facts" ||
        fail "$label: agent $(cat "$TMP/agent_facts") server $(cat "$TMP/server_facts")"
    jq -e -n --slurpfile x "$TMP/agent.json" --slurpfile y "$TMP/body" '
        [$x[0].layers, $y[0].layers] | transpose | all(
            (.[0].max_abs == null and .[1].max_abs == null) or
            ((.[0].max_abs - .[1].max_abs) | fabs) <= 1e-5 * (.[1].max_abs | fabs) + 1e-12)' \
        >/dev/null || fail "$label: max_abs differs from the agent's"
    echo "ok: $label: $(cat "$TMP/server_facts" | head -c 160)..."
}
same_diff cpu-tf32 cpu tf32 "$CPU" "$TF32"
same_diff cpu-cpu64 cpu cpu64 "$CPU" "$CPU64"
same_diff tf32-cpu64 tf32 cpu64 "$TF32" "$CPU64"
same_diff cpu-tf32-truth cpu tf32 "$CPU" "$TF32" cpu64 "$CPU64"
# Known from the seed case (tests/integration/seed_diff.sh): TF32 starts at fc1, relu4 amplifies.
[ "$(jq -r .first_divergent "$TMP/server_cpu-tf32.json")" = fc1 ] || fail "first divergent not fc1"
[ "$(jq -c .amplifiers "$TMP/server_cpu-tf32.json")" = '["relu4"]' ] || fail "amplifiers"
[ "$(jq -r .first_divergent "$TMP/server_cpu-cpu64.json")" = null ] || fail "cpu vs cpu64"
# The runs' noise probes reach the daemon's diffs: fc2's float32 noise band is measured, not
# assumed (docs/COMPARISON.md, "Noise probes").
[ "$(jq -r '.layers[] | select(.name == "fc2") | .noise_from' "$TMP/server_cpu-cpu64.json")" = \
    "probe a" ] || fail "fc2's noise band is not from the cpu run's probe"
[ "$(jq -r '.layers[] | select(.name == "fc1") | .truth.closer' \
    "$TMP/server_cpu-tf32-truth.json")" = a ] || fail "at fc1 the cpu run is closer to cpu64"

# The second read: from the cache, the same bytes.
curl -sS -D "$TMP/headers" -o "$TMP/again" "$URL/api/v1/diff?a=$CPU&b=$TF32"
grep -qi '^X-Cache: hit' "$TMP/headers" || fail "second read not from the cache: $(cat "$TMP/headers")"
cmp -s "$TMP/again" "$TMP/server_cpu-tf32.json" || fail "the cached diff differs"
expect_error 400 bad_request GET "/api/v1/diff?a=$CPU&b=$TF32&atol=-1"
expect_error 400 bad_request GET "/api/v1/diff?a=$CPU&b=$TF32&rtol=nan"
expect_error 400 bad_request GET "/api/v1/diff?a=$CPU"
expect_error 404 not_found GET "/api/v1/diff?a=$CPU&b=11111111-1111-4111-8111-111111111111"
# Other tolerances are another diff: mismatch counts change, verdicts do not.
expect 200 GET "/api/v1/diff?a=$CPU&b=$TF32&atol=0.01&rtol=0"
[ "$(jq .atol "$TMP/body")" = 0.01 ] || fail "atol not applied"
[ "$(jq '[.layers[].mismatches] | add' "$TMP/body")" -lt \
  "$(jq '[.layers[].mismatches] | add' "$TMP/server_cpu-tf32.json")" ] ||
    fail "a wider atol found as many mismatches"
# A run still uploading: 409. Its layers are all known, so POST alone makes it.
UP=22222222-2222-4222-8222-222222222222
jq --arg id "$UP" '.id = $id' "$TMP/cpu/run.json" >"$TMP/up.json"
expect 201 POST /api/v1/runs -H "Authorization: Bearer $AGENT_TOKEN" \
    -H 'Content-Type: application/json' --data-binary @"$TMP/up.json"
expect_error 409 conflict GET "/api/v1/diff?a=$UP&b=$CPU"

# ---- matrix and history ----
expect_error 409 conflict GET "/api/v1/models/$MODEL/history?layer=fc2"
expect 200 POST "/api/v1/models/$MODEL/baseline" -H "$admin" -H 'Content-Type: application/json' \
    --data "{\"run\": \"$CPU64\"}"

expect 200 GET "/api/v1/models/$MODEL/matrix"
cp "$TMP/body" "$TMP/matrix.json"
[ "$(jq -c '[.devices[].key]' "$TMP/matrix.json")" = '["cpu","cpu emulate=tf32:gemm","cpu64"]' ] ||
    fail "devices: $(jq -c .devices "$TMP/matrix.json")"
[ "$(jq -c '[.devices[].run]' "$TMP/matrix.json")" = "[\"$CPU\",\"$TF32\",\"$CPU64\"]" ] ||
    fail "device runs"
[ "$(jq '[.cells[][]] | length' "$TMP/matrix.json")" = 9 ] || fail "not 9 cells"
jq -e '.devices | all(.gpu == null and (.created_at | length > 0))' "$TMP/matrix.json" >/dev/null ||
    fail "device fields"
jq -e '[range(3) as $i | .cells[$i][$i]] | all(.verdict == "identical" and .err == 0 and
    .max_abs == 0 and .first_divergent == null and .a == .b)' "$TMP/matrix.json" >/dev/null ||
    fail "diagonal"
jq -e --arg cpu "$CPU" --arg tf "$TF32" '.cells[0][1] | .a == $cpu and .b == $tf and
    .first_divergent == "fc1"' "$TMP/matrix.json" >/dev/null || fail "cell cpu/tf32"
# Each cell is the /diff of its pair summarized by the last layer.
ids="$CPU $TF32 $CPU64"
i=0
for a in $ids; do
    j=0
    for b in $ids; do
        if [ "$a" != "$b" ]; then
            expect 200 GET "/api/v1/diff?a=$a&b=$b"
            jq -e -n --slurpfile d "$TMP/body" --slurpfile m "$TMP/matrix.json" \
                --argjson i $i --argjson j $j '
                $m[0].cells[$i][$j] as $c | $d[0].layers[-1] as $l |
                $c.verdict == $l.verdict and $c.err == $l.err and $c.max_abs == $l.max_abs and
                $c.first_divergent == $d[0].first_divergent' >/dev/null ||
                fail "cell $i,$j is not /diff's last layer"
        fi
        j=$((j + 1))
    done
    i=$((i + 1))
done
echo "ok: matrix of 3 devices, 9 cells, each as /diff says"

expect 200 GET "/api/v1/models/$MODEL/history?layer=fc2"
cp "$TMP/body" "$TMP/history.json"
jq -e --arg base "$CPU64" '.model == "lenet-11-821" and .baseline == $base and .layer == "fc2"' \
    "$TMP/history.json" >/dev/null || fail "history head: $(head -c 300 "$TMP/history.json")"
[ "$(jq -c '[.series[] | [.device, (.points | map(.run))]]' "$TMP/history.json")" = \
  "[[\"cpu\",[\"$CPU\"]],[\"cpu emulate=tf32:gemm\",[\"$TF32\"]],[\"cpu64\",[\"$CPU64\"]]]" ] ||
    fail "history series: $(jq -c .series "$TMP/history.json")"
jq -e '[.series[].points[]] | all(.env | keys == ["cublas", "cuda_runtime", "cudnn", "driver"])
    and all(.created_at | length > 0)' "$TMP/history.json" >/dev/null || fail "history env"
jq -e '.series[2].points[0] | .verdict == "identical" and .err == 0' "$TMP/history.json" \
    >/dev/null || fail "the baseline's own point"
# Its points are the fc2 layer of each run's /diff against the baseline.
for run in "$CPU" "$TF32"; do
    expect 200 GET "/api/v1/diff?a=$run&b=$CPU64"
    jq -e -n --slurpfile d "$TMP/body" --slurpfile h "$TMP/history.json" --arg run "$run" '
        ($d[0].layers[] | select(.name == "fc2")) as $l |
        ($h[0].series[].points[] | select(.run == $run)) as $p |
        $p.verdict == $l.verdict and $p.err == $l.err and $p.max_abs == $l.max_abs' >/dev/null ||
        fail "history point of $run"
done
[ "$(jq -r '.series[1].points[0].verdict' "$TMP/history.json")" = divergent ] ||
    fail "fc2 of the TF32 run is divergent from cpu64"
expect 200 GET "/api/v1/models/$MODEL/history?layer=fc2&device=cpu64&limit=1"
[ "$(jq -c '[.series[] | .device]' "$TMP/body")" = '["cpu64"]' ] || fail "device filter"
expect_error 404 not_found GET "/api/v1/models/$MODEL/history?layer=nosuch"
expect_error 400 bad_request GET "/api/v1/models/$MODEL/history"
expect_error 400 bad_request GET "/api/v1/models/$MODEL/history?layer=fc2&limit=0"
expect_error 404 not_found GET "/api/v1/models/nosuch/matrix"
expect_error 404 not_found GET "/api/v1/models/nosuch/history?layer=fc2"
echo "ok: history of fc2: three runs, env present"

# ---- the worker: a run finished now is compared with the baseline, unasked ----
agent_run cpu_again
AGAIN=$(jq -r .id "$TMP/cpu_again/run.json")
grep -q "12 already there" "$TMP/cpu_again.err" || fail "identical tensors were sent again"
tries=0
until [ "$(sqlite3 "$DB" "SELECT count(*) FROM diffs WHERE run_a = '$AGAIN' AND run_b = '$CPU64'")" = 1 ]; do
    tries=$((tries + 1))
    [ "$tries" -le 300 ] || fail "the worker did not compare $AGAIN with the baseline"
    sleep 0.1
done
curl -sS -D "$TMP/headers" -o /dev/null "$URL/api/v1/diff?a=$AGAIN&b=$CPU64"
grep -qi '^X-Cache: hit' "$TMP/headers" || fail "the worker's diff is not the one served"
expect 200 GET "/api/v1/models/$MODEL/history?layer=fc2&device=cpu"
[ "$(jq -c '[.series[0].points[].run]' "$TMP/body")" = "[\"$CPU\",\"$AGAIN\"]" ] ||
    fail "history of cpu, oldest first: $(jq -c . "$TMP/body")"
expect 200 GET "/api/v1/models/$MODEL/matrix"
[ "$(jq -r '.devices[0].run' "$TMP/body")" = "$AGAIN" ] || fail "the matrix shows the newest cpu run"

# A framework's dumps, bundled and pushed, make another model: no baseline there.
"$AGENT" bundle --from "$SEED_DIR/pytorch_gpu/output.npz" --out "$TMP/pt" \
    --backend pytorch_gpu --model lenet-pytorch >/dev/null
"$AGENT" push "$TMP/pt" --server "$URL" >/dev/null 2>"$TMP/pt.err" ||
    fail "push of a framework bundle: $(cat "$TMP/pt.err")"
expect_error 409 conflict GET "/api/v1/models/lenet-pytorch/history?layer=output"

# ---- retention: what can no longer be compared is left out, the rest still answers ----
# The TF32 run loses its tensors and its cached diff against the baseline (another process
# writing to the database, as a restore of an old copy would leave it).
sqlite3 "$DB" "UPDATE runs SET trimmed_at = 1 WHERE id = '$TF32';
               DELETE FROM diffs WHERE run_a = '$TF32' AND run_b = '$CPU64'"
expect 200 GET "/api/v1/models/$MODEL/history?layer=fc2"
[ "$(jq -c '[.series[].device]' "$TMP/body")" = '["cpu","cpu64"]' ] ||
    fail "history with a trimmed run: $(jq -c .series "$TMP/body")"
expect 200 GET "/api/v1/models/$MODEL/matrix"
[ "$(jq -c '[.devices[].key]' "$TMP/body")" = '["cpu","cpu64"]' ] ||
    fail "matrix with a trimmed run: $(jq -c .devices "$TMP/body")"
[ "$(jq '[.cells[][]] | length' "$TMP/body")" = 4 ] || fail "not 4 cells"
expect 200 GET "/api/v1/diff?a=$CPU&b=$TF32"
expect_error 410 gone GET "/api/v1/diff?a=$TF32&b=$CPU&atol=0.5"

# ---- metrics ----
expect 200 GET /metrics
for m in gpudiffd_diff_cache_hits_total gpudiffd_diff_cache_misses_total \
         gpudiffd_compare_duration_seconds_count; do
    v=$(sed -n "s/^$m \([0-9]*\)$/\1/p" "$TMP/body")
    [ -n "$v" ] && [ "$v" -gt 0 ] || fail "$m is ${v:-absent}"
    echo "ok: $m $v"
done

# ---- a token the server refuses: exit 9, the server's words ----
GPUDIFF_TOKEN=gd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
expect_exit 9 "$AGENT" push "$TMP/cpu" --server "$URL"
grep -q "refused the token (401 unauthorized: unknown token)" "$TMP/err.txt" ||
    fail "the message does not name the server's answer"
unset GPUDIFF_TOKEN
expect_exit 9 "$AGENT" push "$TMP/cpu" --server "$URL" --token "$(token viewer)"
grep -q "403 forbidden" "$TMP/err.txt" || fail "403 not named"
expect_exit 2 "$AGENT" push "$TMP/cpu" --server "$URL"
server_stop
echo "server e2e: ok"
