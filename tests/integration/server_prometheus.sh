#!/bin/sh
# Debian's prometheus scrapes gpudiffd (issue 15): the test starts prometheus on loopback
# with a temporary configuration (scrape every second, a viewer token as the bearer) and
# storage, uploads the seed run, and asks prometheus' HTTP API: the target is up, and
# gpudiffd_runs{state="complete"} goes from 0 to 1, gpudiffd_blobs to the number of
# distinct tensors, and the layer PUTs answered 201 increase.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
command -v prometheus >/dev/null || skip "prometheus is not installed (deploy/setup.sh)"
command -v promtool >/dev/null || skip "promtool is not installed (deploy/setup.sh)"

PROM=""
prom_cleanup() {
    st=$?
    # Under set -e, `(exit "$st")` below would end the trap before server_cleanup ran.
    set +e
    if [ -n "$PROM" ]; then
        kill -TERM "$PROM" 2>/dev/null || true
        wait "$PROM" 2>/dev/null || true
    fi
    (exit "$st")
    server_cleanup
}
trap prom_cleanup EXIT

server_start
VIEWER=$(token viewer)
AGENT_TOKEN=$(token agent)
PROM_PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/prometheus.yml" <<CONF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: gpudiffd
    metrics_path: /metrics
    authorization:
      type: Bearer
      credentials: $VIEWER
    static_configs:
      - targets: ['${URL#http://}']
CONF
promtool check config "$TMP/prometheus.yml" >/dev/null || fail "promtool: the configuration"
prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom" \
    --web.listen-address="127.0.0.1:$PROM_PORT" >"$TMP/prometheus.log" 2>&1 &
PROM=$!
PROM_URL="http://127.0.0.1:$PROM_PORT"

# query EXPR: the first result's value ("" when none).
query() {
    if curl -sf -G "$PROM_URL/api/v1/query" --data-urlencode "query=$1" >"$TMP/q.json"; then
        jq -r '.data.result[0].value[1] // ""' "$TMP/q.json"
    fi
}
# wait_for EXPR VALUE: until the query gives VALUE, 60 s at most.
wait_for() {
    tries=0
    until [ "$(query "$1")" = "$2" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 300 ] ||
            fail "prometheus: $1 is '$(query "$1")', not $2: $(tail -n 5 "$TMP/prometheus.log")"
        kill -0 "$PROM" 2>/dev/null || fail "prometheus exited: $(tail -n 5 "$TMP/prometheus.log")"
        sleep 0.2
    done
}
wait_for 'up{job="gpudiffd"}' 1
echo "ok: prometheus scrapes gpudiffd with a viewer token"
wait_for 'gpudiffd_runs{state="complete"}' 0

seed_bundle "$TMP/seed"
upload_bundle "$TMP/seed" "$AGENT_TOKEN"
distinct=$(jq -r '[.layers[].sha256] | unique | length' "$TMP/seed/run.json")
wait_for 'gpudiffd_runs{state="complete"}' 1
wait_for 'gpudiffd_blobs' "$distinct"
wait_for 'sum(gpudiffd_http_requests_total{method="PUT",status="201"})' \
    "$(jq '.layers | length' "$TMP/seed/run.json")"
echo "ok: prometheus sees the run: 1 complete, $distinct blobs, every layer PUT counted"

# ---- deploy/grafana/gpudiff.json: every query is PromQL that prometheus accepts, on
# metrics gpudiffd has ----
curl -sf -H "Authorization: Bearer $VIEWER" "$URL/metrics" >"$TMP/metrics.txt"
jq -r '.panels[].targets[].expr' "$GD_SRCDIR/deploy/grafana/gpudiff.json" >"$TMP/exprs"
[ "$(wc -l <"$TMP/exprs")" -ge 10 ] || fail "the dashboard has fewer than 10 queries"
while read -r expr; do
    curl -sf -G "$PROM_URL/api/v1/query" --data-urlencode "query=$expr" >"$TMP/q.json" ||
        fail "prometheus refuses the dashboard's query $expr"
    [ "$(jq -r .status "$TMP/q.json")" = success ] || fail "query $expr: $(cat "$TMP/q.json")"
    for m in $(echo "$expr" | grep -o 'gpudiffd_[a-z_0-9]*' | sed 's/_bucket$//'); do
        grep -q "^# TYPE $m " "$TMP/metrics.txt" || fail "the dashboard uses $m, which gpudiffd lacks"
    done
done <"$TMP/exprs"
echo "ok: the $(wc -l <"$TMP/exprs") queries of the Grafana dashboard run, on metrics gpudiffd has"
