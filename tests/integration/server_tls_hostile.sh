#!/bin/sh
# Hostile clients against gpudiffd's own TLS (tests/integration/hostile_tls.py): slow and
# unfinished handshakes, heads trickled after the handshake, malformed heads, a stalled body
# and the per-address cap, all over TLS, while /healthz keeps answering. Then the daemon's
# log holds a line for each TLS connection cut at the head deadline, /metrics counts them,
# and it stops cleanly.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
. "$GD_SRCDIR/tests/integration/tls.sh"

tls_certs
AGENT_TOKEN=$(token agent)
tls_server_start --header-timeout 2 --body-timeout 2 --body-min-rate 1M \
    --max-connections-per-ip 16
/usr/bin/python3 "$GD_SRCDIR/tests/integration/hostile_tls.py" "$PORT" "$TMP/ca.pem" \
    "$AGENT_TOKEN" || fail "hostile clients over TLS were not all handled as they should be"
cuts=$(grep -c "TLS handshake and request head not in after 2 s" "$SERVER_LOG" || true)
# 8 tricklers, half a handshake, 16 idle connections of the capped address.
[ "$cuts" -ge 25 ] || fail "$cuts TLS connections cut at the head deadline in the log, not 25"
echo "ok: the log names $cuts TLS connections cut at the head deadline"
curl -sf --cacert "$TMP/ca.pem" "$URL/metrics" >"$TMP/metrics" || fail "GET /metrics"
heads=$(sed -n 's/^gpudiffd_connections_header_timeouts_total \([0-9]*\)$/\1/p' "$TMP/metrics")
bodies=$(sed -n 's/^gpudiffd_connections_body_timeouts_total \([0-9]*\)$/\1/p' "$TMP/metrics")
[ "${heads:-0}" -ge 26 ] && [ "${bodies:-0}" = 1 ] ||
    fail "/metrics counts ${heads:-no} head timeouts (not 26) and ${bodies:-no} body timeouts (not 1)"
echo "ok: /metrics counts $heads head timeouts (the TLS cuts and the silent client's 408), $bodies body timeout"
server_stop
echo "ok: gpudiffd stopped cleanly"
