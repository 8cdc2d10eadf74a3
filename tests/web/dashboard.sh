#!/bin/sh
# tests/web/dashboard.sh: the dashboard in a real browser. A daemon serving web/ with a fresh
# database holds the seed case's runs (cpu, cpu64, cpu --emulate tf32; the cpu run is the
# baseline), two tiny runs whose uploaded strings are HTML (`<script>alert(1)</script>` as
# GPU name), two runs of a GPU-like device whose driver and cuDNN change, and 10,000
# listed-only runs for paging; the seed's cpu64 run replayed with TF32 emulated, the seed's two
# framework output files, one network in two model files with an op near its pole, a sweep
# (tests/web/README.md lists all); then it computes the comparisons the browser reads through
# the API, each waited for as long as it takes, and dashboard.test.mjs drives Debian's
# Chromium through playwright-core and checks each view (it prints what it checked and writes
# a screenshot of each view to tests/web/screenshots/).
#
# Needs chromium (skipped without it), node >= 18 and npm (deploy/setup.sh installs Debian's).
# CHROMIUM=/path overrides /usr/bin/chromium.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
started=$(date +%s)
WEB_TESTS="$GD_SRCDIR/tests/web"
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
[ -x "$CHROMIUM" ] || skip "no Chromium at $CHROMIUM (deploy/setup.sh installs Debian's chromium)"
command -v node >/dev/null || fail "node is not installed (deploy/setup.sh installs nodejs)"
node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 18 ? 0 : 1)' ||
    fail "node $(node --version) is too old: playwright-core 1.61 needs 18 or newer"
if [ ! -d "$WEB_TESTS/node_modules/playwright-core" ]; then
    command -v npm >/dev/null || fail "npm is not installed (deploy/setup.sh installs it)"
    npm ci --prefix "$WEB_TESTS" --no-audit --no-fund >"$TMP/npm.log" 2>&1 ||
        { cat "$TMP/npm.log"; fail "npm ci in tests/web failed"; }
fi

# ---- the seed case's runs, made by the agent ----
run() {
    name=$1
    shift
    "$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$SEED_DIR/input.npz" --input-key inp --out "$TMP/$name" "$@" >/dev/null
}
run cpu
run cpu64 --backend cpu64
# web2: the cpu64 run replayed with TF32 emulated in its Gemms (each layer from cpu64's captured
# inputs), before the tf32 run, so that the tf32 run stays its device's newest (the matrix)
"$AGENT" replay "$TMP/cpu64" --emulate tf32 --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
    --out "$TMP/replay" >/dev/null
sleep 1 # created_at counts seconds
run tf32 --emulate tf32

# ---- one GPU-like device, upgraded between two of its runs: the seed's cpu layers under
# driver 550 and cuDNN 9.1, then its tf32 layers under driver 560 and cuDNN 9.19 (bundled
# as another framework's dumps would be), so that history has a version change to mark ----
gpu_bundle() { # gpu_bundle OUT FROM DRIVER CUDNN
    mkdir "$TMP/$1-arrays"
    layers=""
    ops=""
    for rec in $(jq -r '.layers[] | "\(.name)=\(.op)=\(.file)"' "$TMP/$2/run.json"); do
        name=${rec%%=*}
        rest=${rec#*=}
        ln "$TMP/$2/${rest#*=}" "$TMP/$1-arrays/$name.npy"
        layers="$layers${layers:+,}$name"
        ops="$ops --op $name=${rest%%=*}"
    done
    # shellcheck disable=SC2086
    "$AGENT" bundle --from "$TMP/$1-arrays" --out "$TMP/$1" --layers "$layers" $ops \
        --backend cuda --model lenet-11-821 --env 'gpu_name=NVIDIA H200' --env "driver=$3" \
        --env cuda_runtime=12.4.1 --env "cudnn=$4" --env cublas=12.4.5 >/dev/null
}
gpu_bundle gpu-old cpu 550.54.15 9.1.0
sleep 1 # created_at counts seconds: the upgraded run is the newer one
gpu_bundle gpu-new tf32 560.35.03 9.19.0

# ---- tiny runs whose strings are HTML: two, so that they can be diffed ----
mkdir "$TMP/xss-arrays"
cp "$TMP/cpu/layers/0011-output.npy" "$TMP/xss-arrays/output.npy"
XSS='<script>alert(1)</script>'
bundle_xss() {
    "$AGENT" bundle --from "$TMP/xss-arrays" --out "$TMP/$1" --backend cpu --model "$2" \
        --env "gpu_name=$XSS" --env 'host=<b>host</b>' \
        --label 'note=<img src=x onerror=alert(2)>' >/dev/null
}
bundle_xss xss-name "$XSS"
bundle_xss xss1 xss-probe
bundle_xss xss2 xss-probe

# ---- a cuda run in bitwise mode (knobs.repro, as `run --repro bitwise` records it): the runs
# view marks it ----
"$AGENT" bundle --from "$TMP/xss-arrays" --out "$TMP/bitwise" --backend cuda --model bitwise-probe \
    --env 'gpu_name=NVIDIA H200' >/dev/null
jq '.knobs = {"repro": "bitwise", "tf32": false, "batch": null}' "$TMP/bitwise/run.json" \
    >"$TMP/bitwise.json" && mv "$TMP/bitwise.json" "$TMP/bitwise/run.json"

# ---- web2: the seed case's two framework output files (only the output layer dumped) and,
# from tests/web/make_fleet.py, one network in two model files with a Reciprocal near its
# pole (pole: model a on cpu, model b emulating TF32) ----
for fw in pytorch_gpu paddle_gpu; do
    "$AGENT" bundle --from "$SEED_DIR/$fw/output.npz" --out "$TMP/$fw" --backend "$fw" \
        --model lenet-11-821 >/dev/null
done

# ---- the scale test's data (tests/web/make_fleet.py): a 1,000-layer model run three ways
# (cpu, cpu64 as the truth, cpu emulating TF32 in its Gemms), and 50 devices of a small model
# as framework dumps with their GPU names, versions and knobs ----
need_numpy
"$PYTHON_NUMPY" "$WEB_TESTS/make_fleet.py" "$TMP/gen" || fail "make_fleet.py failed"
big() { # big NAME [run options]: in the background, checked below
    name=$1
    shift
    "$AGENT" run --model "$TMP/gen/big/model.json" --input "$TMP/gen/big/input.npy" \
        --out "$TMP/big-$name" --threads 1 "$@" >/dev/null 2>"$TMP/big-$name.log"
}
# web (issue 26): the 2,000-layer encoder (1,000 Gemm+Tanh pairs), on cpu and emulating TF32
enc() { # enc NAME [run options]: in the background, checked below
    name=$1
    shift
    "$AGENT" run --model "$TMP/gen/encoder/model.json" --input "$TMP/gen/encoder/input.npy" \
        --out "$TMP/enc-$name" --threads 1 "$@" >/dev/null 2>"$TMP/enc-$name.log"
}
big cpu & big cpu64 --backend cpu64 & big tf32 --emulate tf32 & enc cpu & enc tf32 --emulate tf32 &
wait
for b in cpu cpu64 tf32; do
    [ -f "$TMP/big-$b/run.json" ] || { cat "$TMP/big-$b.log"; fail "the 1,000-layer run $b failed"; }
done
for b in cpu tf32; do
    [ -f "$TMP/enc-$b/run.json" ] || { cat "$TMP/enc-$b.log"; fail "the 2,000-layer run $b failed"; }
done
"$AGENT" run --model "$TMP/gen/pole/model_a.json" --input "$TMP/gen/pole/input.npy" \
    --out "$TMP/pole-a" >/dev/null
"$AGENT" run --model "$TMP/gen/pole/model_b.json" --input "$TMP/gen/pole/input.npy" \
    --emulate tf32 --out "$TMP/pole-b" >/dev/null
fleet=0
while IFS='|' read -r dir backend gpu driver cuda cudnn knobs; do
    ops=""
    for l in conv1=Conv relu1=Relu pool1=MaxPool fc1=Gemm relu2=Relu output=Gemm; do
        ops="$ops --op $l"
    done
    # shellcheck disable=SC2086
    "$AGENT" bundle --from "$dir" --out "$dir.bundle" --layers conv1,relu1,pool1,fc1,relu2,output \
        $ops --backend "$backend" --model fleet-50 ${gpu:+--env "gpu_name=$gpu"} \
        --env "driver=$driver" --env "cuda_runtime=$cuda" --env "cudnn=$cudnn" \
        --label "rack=r$((fleet % 7))" >/dev/null || fail "bundle of fleet device $fleet failed"
    # bundle has no knob options: the knobs a fleet records go into run.json as run writes them.
    jq --argjson k "$knobs" '.knobs = $k' "$dir.bundle/run.json" >"$dir.json" &&
        mv "$dir.json" "$dir.bundle/run.json"
    fleet=$((fleet + 1))
done <"$TMP/gen/fleet/manifest.txt"
[ "$fleet" = 50 ] || fail "make_fleet.py made $fleet devices, not 50"
# web (issue 26): fleet device 01 upgraded three times within seconds (its driver and cuDNN),
# the same tensors: history's change labels close together, its points at nearly one time
upgrade=0
for v in 560.35.03/9.19.0 570.86.10/9.5.1 575.51.03/9.8.0; do
    sleep 1 # created_at counts seconds: each upgrade is a time of its own
    upgrade=$((upgrade + 1))
    ops=""
    for l in conv1=Conv relu1=Relu pool1=MaxPool fc1=Gemm relu2=Relu output=Gemm; do
        ops="$ops --op $l"
    done
    # shellcheck disable=SC2086
    "$AGENT" bundle --from "$TMP/gen/fleet/01" --out "$TMP/gen/fleet/01-up$upgrade.bundle" \
        --layers conv1,relu1,pool1,fc1,relu2,output $ops --backend cuda --model fleet-50 \
        --env 'gpu_name=NVIDIA H100 80GB HBM3' --env "driver=${v%/*}" --env cuda_runtime=12.4.1 \
        --env "cudnn=${v#*/}" --label rack=r1 >/dev/null || fail "bundle of upgrade $upgrade failed"
    jq '.knobs = {}' "$TMP/gen/fleet/01-up$upgrade.bundle/run.json" >"$TMP/up.json" &&
        mv "$TMP/up.json" "$TMP/gen/fleet/01-up$upgrade.bundle/run.json"
done

# ---- 10,000 runs of a model "bulk", only listed (no layers): the runs view pages them. Each
# records a driver, cuDNN, knobs and a label; run 1234 alone uses conv_algo fft_tiling, so a
# knob filter must find it on page 176 of 200 ----
"$GPUDIFFD" migrate --db "$DB" >/dev/null
sqlite3 "$DB" <<'SQL'
INSERT INTO models(name, created_at) VALUES ('bulk', 0);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
INSERT INTO runs(id, model_id, model_sha256, backend, gpu, host, created_at, created_ts, state,
                 received_at, finished_at, n_layers, content_sha256, meta, device)
SELECT printf('%08x-0000-4000-8000-%012x', i, i), (SELECT id FROM models WHERE name = 'bulk'),
       printf('%064x', 7), 'cuda', CASE WHEN i % 2 = 0 THEN 'NVIDIA H200' ELSE 'NVIDIA T4' END,
       'h' || (i % 16), strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + 60 * i, 'unixepoch'),
       1767225600 + 60 * i, 'complete', 0, 0, 0, printf('%064x', i),
       printf('{"backend":"cuda","env":{"gpu_name":"%s","driver":"%s","cuda_runtime":"12.4.1",' ||
              '"cudnn":"%s","cublas":"12.4.5"},"knobs":{"tf32":%s,"batch":%d,"conv_algo":"%s"},' ||
              '"labels":{"team":"t%d"}}',
              CASE WHEN i % 2 = 0 THEN 'NVIDIA H200' ELSE 'NVIDIA T4' END,
              CASE WHEN i < 5000 THEN '550.54.15' ELSE '560.35.03' END,
              CASE WHEN i < 5000 THEN '9.1.0' ELSE '9.19.0' END,
              CASE WHEN i % 3 = 0 THEN 'true' ELSE 'false' END, 1 + i % 8,
              CASE WHEN i = 1234 THEN 'fft_tiling' ELSE 'heuristic' END, i % 5),
       'cuda ' || CASE WHEN i % 2 = 0 THEN 'NVIDIA H200' ELSE 'NVIDIA T4' END
FROM n;
SQL
# web (issue 26): 1,050 listed runs of a model "deep" (no layers) with a baseline set in the
# database, so that no compare job was queued for any of them: the runs beyond the newest
# 1,000 must still be compared when their page is shown
sqlite3 "$DB" <<'SQL'
INSERT INTO models(name, created_at) VALUES ('deep', 0);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 1049)
INSERT INTO runs(id, model_id, model_sha256, backend, gpu, host, created_at, created_ts, state,
                 received_at, finished_at, n_layers, content_sha256, meta, device)
SELECT printf('%08x-0000-4000-9000-%012x', i, i), (SELECT id FROM models WHERE name = 'deep'),
       printf('%064x', 9), 'cpu', '', 'h', strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + 60 * i, 'unixepoch'),
       1767225600 + 60 * i, 'complete', 0, 0, 0, printf('%064x', 100000 + i),
       printf('{"id":"%s","backend":"cpu","model":{"name":"deep","sha256":null},"created_at":"%s",' ||
              '"env":{},"knobs":{},"labels":{}}', printf('%08x-0000-4000-9000-%012x', i, i),
              strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + 60 * i, 'unixepoch')),
       'cpu'
FROM n;
INSERT INTO baselines(model_id, run_id, set_at, set_by)
SELECT id, '00000419-0000-4000-9000-000000000419', 0, NULL FROM models WHERE name = 'deep';
SQL

AGENT_TOKEN=$(token agent)
ADMIN_TOKEN=$(token admin)
server_start --web-root "$GD_SRCDIR/web"
for b in cpu cpu64 replay tf32 gpu-old gpu-new xss1 xss2 xss-name big-cpu big-cpu64 big-tf32 \
         pytorch_gpu paddle_gpu pole-a pole-b enc-cpu enc-tf32 bitwise; do
    GPUDIFF_TOKEN="$AGENT_TOKEN" "$AGENT" push "$TMP/$b" --server "$URL" >/dev/null ||
        fail "gpudiff-agent push $b failed"
done
for dir in "$TMP"/gen/fleet/[0-9][0-9].bundle "$TMP"/gen/fleet/01-up*.bundle; do
    GPUDIFF_TOKEN="$AGENT_TOKEN" "$AGENT" push "$dir" --server "$URL" >/dev/null ||
        fail "gpudiff-agent push $dir failed"
done
# xss-name's model is called <script>alert(1)</script>; xss1 and xss2 carry such strings in
# their GPU names, hosts and labels.
id_of() { jq -r .id "$1/run.json"; }
baseline() { # baseline MODEL BUNDLE
    expect 200 POST "/api/v1/models/$1/baseline" -H "Authorization: Bearer $ADMIN_TOKEN" \
        -H 'Content-Type: application/json' --data "{\"run\": \"$(id_of "$2")\"}"
}
baseline lenet-11-821 "$TMP/cpu"
baseline big-1000 "$TMP/big-cpu"
baseline fleet-50 "$TMP/gen/fleet/00.bundle"

# ---- web2: a sweep of the seed network on the CPU (three emulation settings, two batch sizes),
# uploaded with its runs; the model is renamed so that its runs do not become the seed model's
# newest (the seed steps read those) ----
sed 's/"name": *"lenet-11-821"/"name": "lenet-sweep"/' "$SEED_MODEL" >"$TMP/lenet-sweep.json"
grep -q '"lenet-sweep"' "$TMP/lenet-sweep.json" || fail "the sweep's model was not renamed"
GPUDIFF_TOKEN="$AGENT_TOKEN" "$AGENT" sweep --model "$TMP/lenet-sweep.json" \
    --weights-dir "$SEED_DIR/initializer" --input "$SEED_DIR/input.npz" --input-key inp \
    --grid 'emulate=none,tf32,bf16;batch=250,all' --repeats 2 --captures 2 --json \
    --server "$URL" >"$TMP/sweep.json" 2>"$TMP/sweep.err" ||
    fail "sweep --server: $(tail -5 "$TMP/sweep.err")"

# ---- jobsrv: a job on two registered devices (curl, as an agent's serve would): one task
# finished with the seed cpu run, one failed with an error that is HTML ----
A_JOB="Authorization: Bearer $AGENT_TOKEN"
printf 'a model' >"$TMP/job-model.onnx"
printf 'an input' >"$TMP/job-input.npy"
for f in job-model.onnx job-input.npy; do
    expect 201 PUT "/api/v1/files/$(sha256sum "$TMP/$f" | cut -d' ' -f1)" -H "$A_JOB" -T "$TMP/$f"
done
job_agent() { # job_agent HOST GPU: registers HOST/cpu, prints the agent id
    expect 200 POST /api/v1/agents -H "$A_JOB" -H 'Content-Type: application/json' --data-binary \
        "{\"host\": \"$1\", \"agent_version\": \"0\", \"devices\": [{\"key\": \"$1/cpu\", \"backend\": \"cpu\", \"env\": {}, \"labels\": {\"gpu\": \"$2\"}}]}"
    jq -r .agent_id "$TMP/body"
}
JOB_AG1=$(job_agent web-h1 sm_75)
JOB_AG2=$(job_agent web-h2 sm_86)
jq -n --arg m "$(sha256sum "$TMP/job-model.onnx" | cut -d' ' -f1)" \
    --arg i "$(sha256sum "$TMP/job-input.npy" | cut -d' ' -f1)" \
    '{model: "lenet-11-821", files: [{role: "model", name: "model.onnx", sha256: $m},
      {role: "input", name: "input.npy", sha256: $i}], knobs: {batch: 4},
      match: {"labels.gpu": ["sm_75", "sm_86"]}}' >"$TMP/job.json"
expect 201 POST /api/v1/jobs -H "$A_JOB" -H 'Content-Type: application/json' --data-binary @"$TMP/job.json"
JOB_ID=$(jq -r .id "$TMP/body")
expect 200 POST "/api/v1/agents/$JOB_AG1/poll?wait=0" -H "$A_JOB"
expect 200 POST "/api/v1/leases/$(jq -r .lease_id "$TMP/body")/done" -H "$A_JOB" \
    -H 'Content-Type: application/json' --data-binary "{\"run_id\": \"$(id_of "$TMP/cpu")\"}"
expect 200 POST "/api/v1/agents/$JOB_AG2/poll?wait=0" -H "$A_JOB"
expect 200 POST "/api/v1/leases/$(jq -r .lease_id "$TMP/body")/fail" -H "$A_JOB" \
    -H 'Content-Type: application/json' \
    --data-binary '{"error": "<img src=x onerror=alert(1)> exit 3", "exit_code": 3}'

# ---- web2: the comparisons the browser steps read, computed through the API first, each
# waited for: a sanitized daemon on a loaded machine takes minutes where a browser step's
# wait is fixed. The matrix of 50 devices is filled but for its last two rows (98 cells), so
# that the page still computes some row by row with its progress ----
prefetch() { # prefetch WHAT PATH: one GET, as long as it takes
    t0=$(date +%s)
    curl -sf -o /dev/null "$URL$2" || fail "prefetch $1: GET $2 failed"
    echo "prefetched $1 in $(($(date +%s) - t0)) s"
}
diff_path() { # diff_path A B [TRUTH] [tolerances]: the diff's summary (issue 26: the view
    # the browser reads, made from the diff, which is computed first)
    echo "/api/v1/diff/summary?a=$(id_of "$1")&b=$(id_of "$2")${3:+&truth=$(id_of "$3")}${4:-}"
}
prefetch "seed: cpu vs tf32, truth cpu64" "$(diff_path "$TMP/cpu" "$TMP/tf32" "$TMP/cpu64")"
prefetch "seed: tf32 vs cpu64 with the replay" "$(diff_path "$TMP/tf32" "$TMP/cpu64")"
prefetch "seed: the replay vs its source" "$(diff_path "$TMP/replay" "$TMP/cpu64")"
prefetch "seed: pytorch vs cpu64" "$(diff_path "$TMP/pytorch_gpu" "$TMP/cpu64" "" '&atol=0.01&rtol=0')"
prefetch "seed: pytorch vs paddle, truth cpu64" \
    "$(diff_path "$TMP/pytorch_gpu" "$TMP/paddle_gpu" "$TMP/cpu64" '&atol=0.01&rtol=0')"
prefetch "pole: two model files" "$(diff_path "$TMP/pole-a" "$TMP/pole-b")"
prefetch "1,000 layers: cpu vs tf32, truth cpu64" "$(diff_path "$TMP/big-cpu" "$TMP/big-tf32" "$TMP/big-cpu64")"
prefetch "2,000 layers: cpu vs tf32" "$(diff_path "$TMP/enc-cpu" "$TMP/enc-tf32")"
prefetch "the matrix of lenet-11-821" "/api/v1/matrix?model=lenet-11-821"
devices=$(curl -sf "$URL/api/v1/matrix?model=fleet-50&compute=none" | jq '.devices | length')
[ "$devices" = 50 ] || fail "fleet-50 has $devices devices, not 50"
t0=$(date +%s)
seq 0 47 | xargs -P 2 -I '{}' curl -sf -o /dev/null "$URL/api/v1/matrix?model=fleet-50&row={}" ||
    fail "filling rows of the fleet-50 matrix failed"
echo "prefetched rows 1-48 of the fleet-50 matrix (2,352 cells) in $(($(date +%s) - t0)) s"

export GD_URL="$URL" GD_CHROMIUM="$CHROMIUM" GD_TMP="$TMP" ADMIN_TOKEN
export GD_SHOTS="${GD_SHOTS:-$WEB_TESTS/screenshots}"
export RUN_CPU="$(id_of "$TMP/cpu")" RUN_CPU64="$(id_of "$TMP/cpu64")"
export RUN_TF32="$(id_of "$TMP/tf32")" RUN_XSS1="$(id_of "$TMP/xss1")"
export RUN_BITWISE="$(id_of "$TMP/bitwise")"
export RUN_XSS2="$(id_of "$TMP/xss2")" RUN_XSS_NAME="$(id_of "$TMP/xss-name")"
export RUN_GPU_NEW="$(id_of "$TMP/gpu-new")" RUN_BIG_CPU="$(id_of "$TMP/big-cpu")"
export RUN_BIG_CPU64="$(id_of "$TMP/big-cpu64")" RUN_BIG_TF32="$(id_of "$TMP/big-tf32")"
export RUN_FLEET0="$(id_of "$TMP/gen/fleet/00.bundle")"
export RUN_REPLAY="$(id_of "$TMP/replay")" RUN_PT="$(id_of "$TMP/pytorch_gpu")"
export RUN_PD="$(id_of "$TMP/paddle_gpu")" RUN_POLE_A="$(id_of "$TMP/pole-a")"
export RUN_POLE_B="$(id_of "$TMP/pole-b")" SWEEP_ID="$(jq -r .id "$TMP/sweep.json")"
export BUNDLE_CPU="$TMP/cpu" BUNDLE_TF32="$TMP/tf32" JOB_ID
export RUN_ENC_CPU="$(id_of "$TMP/enc-cpu")" RUN_ENC_TF32="$(id_of "$TMP/enc-tf32")"
export RUN_FLEET48="$(id_of "$TMP/gen/fleet/48.bundle")" RUN_FLEET49="$(id_of "$TMP/gen/fleet/49.bundle")"
export RUN_FLEET01_UP3="$(id_of "$TMP/gen/fleet/01-up3.bundle")"
status=0
seeded=$(date +%s)
node "$WEB_TESTS/dashboard.test.mjs" || status=1
echo "seeding and prefetching took $((seeded - started)) s, the browser steps $(($(date +%s) - seeded)) s"
server_stop
# GD_WEB_KEEP=DIR keeps the seeded database, the two bundles the layer step reads and the
# run ids, to serve them again by hand (gpudiffd --db DIR/gpudiff.db --web-root web) and run
# the browser steps alone (. DIR/ids.env; GD_URL=... node tests/web/dashboard.test.mjs).
if [ -n "${GD_WEB_KEEP:-}" ]; then
    mkdir -p "$GD_WEB_KEEP"
    cp "$DB" "$GD_WEB_KEEP/gpudiff.db"
    rm -rf "$GD_WEB_KEEP/cpu" "$GD_WEB_KEEP/tf32"
    cp -r "$TMP/cpu" "$TMP/tf32" "$GD_WEB_KEEP/"
    env | grep -E '^(RUN_|SWEEP_ID=)' | sed 's/^/export /' >"$GD_WEB_KEEP/ids.env"
    echo "export BUNDLE_CPU=$GD_WEB_KEEP/cpu BUNDLE_TF32=$GD_WEB_KEEP/tf32" >>"$GD_WEB_KEEP/ids.env"
fi
exit "$status"
