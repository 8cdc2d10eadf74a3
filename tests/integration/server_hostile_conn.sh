#!/bin/sh
# Hostile connections to gpudiffd (tests/integration/hostile_conns.py): 256 idle sockets,
# 256 slowloris clients, then 1,000 of both at once, one address over its share, a body
# that trickles, and more connections than --max-connections. /healthz must keep answering
# in milliseconds throughout, the slow ones must be closed within seconds, the refusals and
# time-outs must show in /metrics, and the database must not change.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_numpy
run() {
    PYTHONPATH="$GD_SRCDIR/tests/integration" "$PYTHON_NUMPY" \
        "$GD_SRCDIR/tests/integration/hostile_conns.py" "$URL" "$DB" "$1" "$AGENT_TOKEN" ||
        fail "hostile connections ($1) were not all handled as they should be"
}
AGENT_TOKEN=$(token agent)
server_start --header-timeout 2 --body-timeout 2 --body-min-rate 1K
run many
server_stop
server_start --header-timeout 2 --max-connections 64
run limit
server_stop
