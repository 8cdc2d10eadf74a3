#!/bin/sh
# A sweep uploaded and served on loopback: `gpudiff-agent sweep --server` runs the seed case
# over two CPU settings at two batch sizes, uploads the float64 run and each setting's run as
# ordinary runs, then the sweep; GET /api/v1/sweeps lists it, GET /api/v1/sweeps/{id} gives
# its table (what the agent measured, per setting), the runs it links (complete runs the
# server serves, with the knobs the settings had), and the document; the diff the daemon
# computes between two of its runs names the first divergent layer the sweep named. The same
# document again is 200; other content under its id, a sweep naming a run the server lacks, a
# broken document, a missing or too weak token are refused and store nothing.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
need_numpy

AGENT_TOKEN=$(token agent)
VIEWER_TOKEN=$(token viewer)
agent="Authorization: Bearer $AGENT_TOKEN"
server_start
GPUDIFF_TOKEN=$AGENT_TOKEN
export GPUDIFF_TOKEN

mkdir "$TMP/tmp"
TMPDIR="$TMP/tmp" "$AGENT" sweep --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
    --input "$SEED_DIR/input.npz" --input-key inp --grid 'emulate=none,tf32;batch=250,all' \
    --repeats 2 --captures 2 --json --server "$URL" >"$TMP/sweep.json" 2>"$TMP/sweep.err" ||
    fail "sweep --server: exit $?: $(tail -5 "$TMP/sweep.err")"
tail -3 "$TMP/sweep.err"
grep -q "sweep .* is on the server with its 3 runs" "$TMP/sweep.err" || fail "no upload line"
# without --out the bundles went to a temporary folder, removed after the upload
[ -z "$(ls "$TMP/tmp")" ] || fail "the bundles' folder was left behind: $(ls "$TMP/tmp")"
ID=$(jq -r .id "$TMP/sweep.json")

expect 200 GET /api/v1/sweeps
jq -e --arg id "$ID" '.total == 1 and .sweeps[0].id == $id and .sweeps[0].model == "lenet-11-821"
    and .sweeps[0].backend == "cpu" and .sweeps[0].settings == 2 and .sweeps[0].gpu == null
    and (.sweeps[0].fastest.setting | type) == "string"' "$TMP/body" >/dev/null ||
    fail "the list: $(cat "$TMP/body")"
expect 200 GET "/api/v1/sweeps?model=lenet-11-821&backend=cpu&limit=1"
[ "$(jq .total "$TMP/body")" = 1 ] || fail "filtered list: $(cat "$TMP/body")"
expect 200 GET "/api/v1/sweeps?backend=cuda"
[ "$(jq .total "$TMP/body")" = 0 ] || fail "no cuda sweep: $(cat "$TMP/body")"

expect 200 GET "/api/v1/sweeps/$ID"
cp "$TMP/body" "$TMP/served.json"
# the table is the agent's measurements, setting by setting
jq -e --slurpfile a "$TMP/sweep.json" '
    [.table[] | [.setting, .status, .run, .forward_ms, .vs_float64.max_abs,
                 .vs_float64.first_divergent, .deterministic, .batch_invariant]] ==
    [$a[0].settings[] | [.name, .status, .run, .time.forward_ms, .vs_float64.output.max_abs,
                         (.vs_float64.first_divergent.layer // null), .deterministic,
                         .batch_invariant]]' "$TMP/served.json" >/dev/null ||
    fail "the table is not what the agent measured: $(jq -c .table "$TMP/served.json")"
jq -e '.table[1].setting == "emulate=tf32:gemm" and .table[1].vs_float64.first_divergent == "fc1"
    and .table[0].deterministic == true and .table[0].batch_invariant == true
    and .sweep.format == "gpudiff-sweep" and (.sweep.settings[0] | has("bundle") | not)
    and ([.runs[].role] == ["float64", "setting", "setting"])
    and ([.runs[].tensors] | all)' "$TMP/served.json" >/dev/null ||
    fail "GET /api/v1/sweeps/$ID: $(head -c 800 "$TMP/served.json")"

# the linked runs are ordinary complete runs, with the settings' knobs
F64=$(jq -r '.runs[0].run' "$TMP/served.json")
NONE=$(jq -r '.runs[1].run' "$TMP/served.json")
TF32=$(jq -r '.runs[2].run' "$TMP/served.json")
expect 200 GET "/api/v1/runs/$TF32"
jq -e --arg s "$ID" '.state == "complete" and .knobs.emulate == "tf32:gemm" and
    .labels.sweep == $s and .labels.setting == "emulate=tf32:gemm"' "$TMP/body" >/dev/null ||
    fail "the tf32 run: $(head -c 600 "$TMP/body")"
expect 200 GET "/api/v1/runs/$F64"
[ "$(jq -r .backend "$TMP/body")" = cpu64 ] || fail "the float64 run is not cpu64"
expect 200 GET "/api/v1/diff?a=$TF32&b=$F64"
[ "$(jq -r .first_divergent "$TMP/body")" = fc1 ] || fail "the daemon's diff: $(jq -c '[.first_divergent, .amplifiers]' "$TMP/body")"
expect 200 GET "/api/v1/diff?a=$NONE&b=$F64"
[ "$(jq -r .first_divergent "$TMP/body")" = null ] || fail "cpu against float64 is noise"

# the same document again: 200, nothing new
# (python keeps 1.0 a real where jq would write 1: the same document is the same numbers)
edit() {
    "$PYTHON_NUMPY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
for s in d["settings"]:
    s.pop("bundle", None)
d["float64"].pop("bundle", None)
exec(sys.argv[2])
print(json.dumps(d))' "$TMP/sweep.json" "$1"
}
edit 'pass' >"$TMP/doc.json"
before=$(sqlite3 "$DB" 'SELECT count(*) FROM sweeps; SELECT count(*) FROM sweep_runs')
expect 200 POST /api/v1/sweeps -H "$agent" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/doc.json"
expect_error 409 conflict POST /api/v1/sweeps -H "$agent" -H 'Content-Type: application/json' \
    --data-binary "$(edit 'd["grid"] = "changed"')"
# a sweep naming a run the server lacks
edit 'd["id"] = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"
d["settings"][1]["run"] = "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee"' >"$TMP/lacks.json"
expect_error 409 conflict POST /api/v1/sweeps -H "$agent" -H 'Content-Type: application/json' \
    --data-binary @"$TMP/lacks.json"
jq -r .error.message "$TMP/body" | grep -q "eeeeeeee-eeee-4eee-8eee-eeeeeeeeeeee (setting emulate=tf32:gemm) is not on the server" ||
    fail "the 409 does not name the run"
expect_error 400 bad_json POST /api/v1/sweeps -H "$agent" -H 'Content-Type: application/json' \
    --data-binary '{"format": "gpudiff-sweep",'
expect_error 400 bad_request POST /api/v1/sweeps -H "$agent" -H 'Content-Type: application/json' \
    --data-binary "$(edit 'd["id"] = "dddddddd-dddd-4ddd-8ddd-dddddddddddd"; d["settings"] = []')"
expect_error 401 unauthorized POST /api/v1/sweeps -H 'Content-Type: application/json' \
    --data-binary @"$TMP/lacks.json"
expect_error 403 forbidden POST /api/v1/sweeps -H "Authorization: Bearer $VIEWER_TOKEN" \
    -H 'Content-Type: application/json' --data-binary @"$TMP/lacks.json"
after=$(sqlite3 "$DB" 'SELECT count(*) FROM sweeps; SELECT count(*) FROM sweep_runs')
[ "$before" = "$after" ] || fail "a refused sweep changed the database: $before -> $after"
expect_error 404 not_found GET /api/v1/sweeps/dddddddd-dddd-4ddd-8ddd-dddddddddddd
expect_error 400 bad_request GET /api/v1/sweeps/nope
expect_error 400 bad_request GET "/api/v1/sweeps?limit=0"
expect_error 400 bad_request GET "/api/v1/sweeps?colour=red"
expect_error 405 method_not_allowed DELETE "/api/v1/sweeps/$ID" -H "$agent"
echo "PASS"
