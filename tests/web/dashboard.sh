#!/bin/sh
# tests/web/dashboard.sh: the dashboard in a real browser. A daemon serving web/ with a fresh
# database holds the seed case's runs (cpu, cpu64, cpu --emulate tf32; the cpu run is the
# baseline), two tiny runs whose uploaded strings are HTML (`<script>alert(1)</script>` as
# GPU name), two runs of a GPU-like device whose driver and cuDNN change, and 10,000
# listed-only runs for paging; then dashboard.test.mjs drives Debian's
# Chromium through playwright-core and checks each view (it prints what it checked and writes
# a screenshot of each view to tests/web/screenshots/).
#
# Needs chromium (skipped without it), node >= 18 and npm (deploy/setup.sh installs Debian's).
# CHROMIUM=/path overrides /usr/bin/chromium.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
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

# ---- 10,000 runs of a model "bulk", only listed (no layers): the runs view pages them ----
"$GPUDIFFD" migrate --db "$DB" >/dev/null
sqlite3 "$DB" <<'SQL'
INSERT INTO models(name, created_at) VALUES ('bulk', 0);
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 9999)
INSERT INTO runs(id, model_id, model_sha256, backend, gpu, host, created_at, created_ts, state,
                 received_at, finished_at, n_layers, content_sha256, meta)
SELECT printf('%08x-0000-4000-8000-%012x', i, i), (SELECT id FROM models WHERE name = 'bulk'),
       printf('%064x', 7), 'cuda', CASE WHEN i % 2 = 0 THEN 'NVIDIA H200' ELSE 'NVIDIA T4' END,
       'h' || (i % 16), strftime('%Y-%m-%dT%H:%M:%SZ', 1767225600 + 60 * i, 'unixepoch'),
       1767225600 + 60 * i, 'complete', 0, 0, 0, printf('%064x', i),
       printf('{"backend":"cuda","knobs":{"tf32":%s,"batch":%d}}',
              CASE WHEN i % 3 = 0 THEN 'true' ELSE 'false' END, 1 + i % 8)
FROM n;
SQL

AGENT_TOKEN=$(token agent)
ADMIN_TOKEN=$(token admin)
server_start --web-root "$GD_SRCDIR/web"
for b in cpu cpu64 tf32 gpu-old gpu-new xss1 xss2 xss-name; do
    GPUDIFF_TOKEN="$AGENT_TOKEN" "$AGENT" push "$TMP/$b" --server "$URL" >/dev/null ||
        fail "gpudiff-agent push $b failed"
done
# xss-name's model is called <script>alert(1)</script>; xss1 and xss2 carry such strings in
# their GPU names, hosts and labels.
CPU=$(jq -r .id "$TMP/cpu/run.json")
expect 200 POST /api/v1/models/lenet-11-821/baseline -H "Authorization: Bearer $ADMIN_TOKEN" \
    -H 'Content-Type: application/json' --data "{\"run\": \"$CPU\"}"

GD_URL="$URL" GD_CHROMIUM="$CHROMIUM" GD_TMP="$TMP" \
GD_SHOTS="${GD_SHOTS:-$WEB_TESTS/screenshots}" \
RUN_CPU="$CPU" RUN_CPU64=$(jq -r .id "$TMP/cpu64/run.json") \
RUN_TF32=$(jq -r .id "$TMP/tf32/run.json") RUN_XSS1=$(jq -r .id "$TMP/xss1/run.json") \
RUN_XSS2=$(jq -r .id "$TMP/xss2/run.json") RUN_XSS_NAME=$(jq -r .id "$TMP/xss-name/run.json") \
RUN_GPU_NEW=$(jq -r .id "$TMP/gpu-new/run.json") \
BUNDLE_CPU="$TMP/cpu" BUNDLE_TF32="$TMP/tf32" \
    node "$WEB_TESTS/dashboard.test.mjs"
server_stop
