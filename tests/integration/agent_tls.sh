#!/bin/sh
# gpudiff-agent over HTTPS to gpudiffd's own TLS (issue 15): the test makes a CA and a
# server certificate for the name "localhost" (openssl, tests/integration/tls.sh) and
# starts gpudiffd with --tls-cert and --tls-key.
# - the start log reports the TLS setup (subject, names, issuer, expiry, key type);
# - push https://localhost:PORT --cacert CA uploads the seed bundle; the run downloads back
#   byte for byte;
# - another CA, or the right CA with a host name the certificate does not hold
#   (https://127.0.0.1:PORT), is refused at once (no retry), with curl's reason and what to
#   do about it; nothing reaches the daemon's handlers;
# - plain HTTP to the TLS port is answered 400 in clear words, at once;
# - a bad certificate or key is a clear error at start (exit 2), not a crash;
# - a token is never sent over plain http:// to a non-loopback address: refused before any
#   connection (check_upload shows --insecure-http allows it);
# - a balancer's TLS in front (haproxy) re-encrypting to gpudiffd's own, verified with the
#   same CA (docs/DEPLOY.md): a layer comes back through both byte for byte.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
. "$GD_SRCDIR/tests/integration/tls.sh"
need_seed

HAPROXY=""
tls_cleanup() {
    st=$?
    # Under set -e, `(exit "$st")` below would end the trap before server_cleanup ran.
    set +e
    if [ -n "$HAPROXY" ]; then
        kill -TERM "$HAPROXY" 2>/dev/null || true
        wait "$HAPROXY" 2>/dev/null || true
    fi
    (exit "$st")
    server_cleanup
}
trap tls_cleanup EXIT

tls_certs

# ---- bad certificates and keys: refused at start, with the reason ----
root_flag=""
[ "$(id -u)" != 0 ] || root_flag=--allow-root
refused_start() {
    want=$1
    shift
    expect_exit 2 "$GPUDIFFD" --db "$TMP/refused.db" --listen 127.0.0.1:0 --log-level error \
        $root_flag "$@"
    grep -q -- "$want" "$TMP/err.txt" || fail "no \"$want\" in: $(cat "$TMP/err.txt")"
    ! grep -q "listening" "$TMP/err.txt" || fail "it listened anyway"
}
refused_start "is not the key of the certificate" --tls-cert "$TMP/server.pem" \
    --tls-key "$TMP/other.key"
refused_start "together" --tls-cert "$TMP/server.pem"
refused_start "No such file" --tls-cert "$TMP/server.pem" --tls-key "$TMP/missing.key"
refused_start "PEM" --tls-cert "$TMP/server.ext" --tls-key "$TMP/server.key"
openssl pkcs8 -topk8 -in "$TMP/server.key" -passout pass:secret -out "$TMP/encrypted.key" \
    2>/dev/null || fail "openssl: encrypting the key"
refused_start "encrypted" --tls-cert "$TMP/server.pem" --tls-key "$TMP/encrypted.key"
refused_start "tls-priorities" --tls-cert "$TMP/server.pem" --tls-key "$TMP/server.key" \
    --tls-priorities "NORMAL:+NO-SUCH-THING"
echo "ok: a wrong key, a missing or non-PEM file, an encrypted key, a bad priority string are refused at start"

# ---- the daemon on its own TLS; its start log ----
tls_server_start
# The certificate is valid for 2 days from when openssl made it: 1 or 2 whole days are left.
grep -q "TLS on: certificate subject CN=localhost, names localhost, issuer CN=gpudiff test ca, expires 20[0-9-]* [0-9:]* UTC (in [12] days\{0,1\}), key RSA 2048 bits" "$SERVER_LOG" ||
    fail "the start log does not report the TLS setup: $(grep -i "tls" "$SERVER_LOG" | tail -3)"
grep -q "listening on https://127.0.0.1:$PORT/" "$SERVER_LOG" || fail "no https:// in the log"
echo "ok: the start log reports: $(sed -n 's/.*\(TLS on: .*\), chain.*/\1/p' "$SERVER_LOG")"

GPUDIFF_TOKEN=$(token agent)
export GPUDIFF_TOKEN
seed_bundle "$TMP/seed"
ID=$(jq -r .id "$TMP/seed/run.json")

# ---- refused: another CA; a host name the certificate does not hold ----
expect_exit 8 "$AGENT" push "$TMP/seed" --server "https://localhost:$PORT" \
    --cacert "$TMP/other.pem" --retries 3
grep -q 'certificate' "$TMP/err.txt" || fail "no word of the certificate: $(cat "$TMP/err.txt")"
grep -q -- '--cacert' "$TMP/err.txt" || fail "no hint of --cacert"
! grep -q 'retry' "$TMP/err.txt" || fail "a certificate that does not verify was retried"
echo "ok: another CA is refused"
expect_exit 8 "$AGENT" push "$TMP/seed" --server "https://127.0.0.1:$PORT" \
    --cacert "$TMP/ca.pem" --retries 3
grep -qi 'name\|match' "$TMP/err.txt" || fail "no word of the host name: $(cat "$TMP/err.txt")"
echo "ok: a host name the certificate does not hold is refused"
# Without --cacert the system's store is used, which does not hold the test CA.
expect_exit 8 "$AGENT" push "$TMP/seed" --server "https://localhost:$PORT" --retries 3
echo "ok: the system's store does not trust the test CA"
! grep -q 'PUT \|POST ' "$SERVER_LOG" || fail "a refused connection reached the handlers"

# ---- plain HTTP to the TLS port: a 400 in clear words, not a hang ----
st=$(curl -sS -m 5 -o "$TMP/body" -w '%{http_code}' "http://127.0.0.1:$PORT/healthz") ||
    fail "plain HTTP to the TLS port: curl failed (hung or closed)"
[ "$st" = 400 ] || fail "plain HTTP to the TLS port: status $st"
jq -e '.error.code == "bad_request" and (.error.message | test("https://"))' "$TMP/body" \
    >/dev/null || fail "plain HTTP to the TLS port: $(cat "$TMP/body")"
echo "ok: plain HTTP to the TLS port -> 400: $(jq -r .error.message "$TMP/body")"

# ---- plain HTTP to another host: refused before connecting ----
expect_exit 2 "$AGENT" push "$TMP/seed" --server "http://192.0.2.1:8470" --retries 0
grep -q -- '--insecure-http' "$TMP/err.txt" || fail "no hint of --insecure-http"
echo "ok: a token is not sent over plain HTTP to another host (tests/agent/check_upload: unless --insecure-http)"

# ---- the upload over TLS ----
"$AGENT" push "$TMP/seed" --server "https://localhost:$PORT" --cacert "$TMP/ca.pem" \
    >"$TMP/push.out" 2>"$TMP/push.err" || fail "push over TLS: $(cat "$TMP/push.err")"
[ "$(cat "$TMP/push.out")" = "$ID" ] || fail "push printed $(cat "$TMP/push.out")"
jq -r '.layers[] | "\(.index) \(.file)"' "$TMP/seed/run.json" >"$TMP/files"
n=0
while read -r index file; do
    curl -sf --cacert "$TMP/ca.pem" -o "$TMP/back.npy" \
        "https://localhost:$PORT/api/v1/runs/$ID/layers/$index.npy" || fail "GET $index"
    cmp -s "$TMP/back.npy" "$TMP/seed/$file" || fail "layer $index differs after TLS"
    n=$((n + 1))
done <"$TMP/files"
echo "ok: the seed run went up over gpudiffd's own HTTPS with the test CA; its $n layers come back byte for byte"

# ---- a balancer's TLS in front, re-encrypting to gpudiffd's own ----
if command -v haproxy >/dev/null; then
    cat "$TMP/server.pem" "$TMP/server.key" >"$TMP/haproxy.pem"
    LB_PORT=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    cat >"$TMP/haproxy.cfg" <<EOF
global
    maxconn 64
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
frontend tls
    bind 127.0.0.1:$LB_PORT ssl crt $TMP/haproxy.pem
    default_backend daemon
backend daemon
    server d 127.0.0.1:$PORT ssl verify required ca-file $TMP/ca.pem verifyhost localhost sni str(localhost)
EOF
    haproxy -f "$TMP/haproxy.cfg" -db >"$TMP/haproxy.log" 2>&1 &
    HAPROXY=$!
    tries=0
    until curl -sf --cacert "$TMP/ca.pem" "https://localhost:$LB_PORT/healthz" >/dev/null; do
        tries=$((tries + 1))
        [ "$tries" -le 100 ] || fail "haproxy does not answer over TLS: $(cat "$TMP/haproxy.log")"
        sleep 0.1
    done
    read -r index file <"$TMP/files"
    curl -sf --cacert "$TMP/ca.pem" -o "$TMP/back.npy" \
        "https://localhost:$LB_PORT/api/v1/runs/$ID/layers/$index.npy" || fail "GET via haproxy"
    cmp -s "$TMP/back.npy" "$TMP/seed/$file" || fail "layer $index differs through haproxy"
    echo "ok: through haproxy's TLS, re-encrypted to gpudiffd's (verified), layer $index comes back byte for byte"
else
    echo "note: haproxy is not installed: the balancer case is not run (deploy/setup.sh installs it)"
fi
