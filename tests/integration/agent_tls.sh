#!/bin/sh
# gpudiff-agent over HTTPS (issue 15): the test makes a CA and a server certificate for the
# name "localhost" (openssl), and puts haproxy in front of gpudiffd to terminate TLS (the
# deployment docs/DEPLOY.md describes: gpudiffd itself speaks plain HTTP on loopback).
# - push https://localhost:PORT --cacert CA uploads the seed bundle; the run downloads back
#   through the same TLS front byte for byte;
# - another CA, or the right CA with a host name the certificate does not hold
#   (https://127.0.0.1:PORT), is refused at once (no retry), with curl's reason and what to
#   do about it; nothing reaches the daemon;
# - a token is never sent over plain http:// to a non-loopback address: refused before any
#   connection (check_upload shows --insecure-http allows it).
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
command -v openssl >/dev/null || skip "openssl is not installed"
command -v haproxy >/dev/null || skip "haproxy is not installed (deploy/setup.sh installs it)"

HAPROXY=""
tls_cleanup() {
    st=$?
    if [ -n "$HAPROXY" ]; then
        kill -TERM "$HAPROXY" 2>/dev/null || true
        wait "$HAPROXY" 2>/dev/null || true
    fi
    (exit "$st")
    server_cleanup
}
trap tls_cleanup EXIT

# ---- a CA, a certificate for localhost signed by it, and a second CA ----
cd "$TMP"
for ca in ca other; do
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$ca.key" -out "$ca.pem" -days 2 \
        -subj "/CN=gpudiff test $ca" >/dev/null 2>&1 || fail "openssl: CA $ca"
done
openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr -subj "/CN=localhost" \
    >/dev/null 2>&1 || fail "openssl: request"
printf 'subjectAltName = DNS:localhost\nextendedKeyUsage = serverAuth\n' >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.pem >/dev/null 2>&1 || fail "openssl: signing"
cat server.pem server.key >haproxy.pem
cd - >/dev/null

server_start
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
    server d ${URL#http://}
EOF
haproxy -f "$TMP/haproxy.cfg" -db >"$TMP/haproxy.log" 2>&1 &
HAPROXY=$!
tries=0
until curl -sf --cacert "$TMP/ca.pem" "https://localhost:$LB_PORT/healthz" >/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -le 100 ] || fail "haproxy does not answer over TLS: $(cat "$TMP/haproxy.log")"
    sleep 0.1
done

GPUDIFF_TOKEN=$(token agent)
export GPUDIFF_TOKEN
seed_bundle "$TMP/seed"
ID=$(jq -r .id "$TMP/seed/run.json")

# ---- refused: another CA; a host name the certificate does not hold ----
puts_before=$(grep -c 'PUT \|POST ' "$SERVER_LOG" || true)
expect_exit 8 "$AGENT" push "$TMP/seed" --server "https://localhost:$LB_PORT" \
    --cacert "$TMP/other.pem" --retries 3
grep -q 'certificate' "$TMP/err.txt" || fail "no word of the certificate: $(cat "$TMP/err.txt")"
grep -q -- '--cacert' "$TMP/err.txt" || fail "no hint of --cacert"
! grep -q 'retry' "$TMP/err.txt" || fail "a certificate that does not verify was retried"
echo "ok: another CA is refused"
expect_exit 8 "$AGENT" push "$TMP/seed" --server "https://127.0.0.1:$LB_PORT" \
    --cacert "$TMP/ca.pem" --retries 3
grep -qi 'name\|match' "$TMP/err.txt" || fail "no word of the host name: $(cat "$TMP/err.txt")"
echo "ok: a host name the certificate does not hold is refused"
# Without --cacert the system's store is used, which does not hold the test CA.
expect_exit 8 "$AGENT" push "$TMP/seed" --server "https://localhost:$LB_PORT" --retries 3
echo "ok: the system's store does not trust the test CA"
[ "$(grep -c 'PUT \|POST ' "$SERVER_LOG" || true)" = "$puts_before" ] ||
    fail "a refused connection reached the daemon"

# ---- plain HTTP to another host: refused before connecting ----
expect_exit 2 "$AGENT" push "$TMP/seed" --server "http://192.0.2.1:8470" --retries 0
grep -q -- '--insecure-http' "$TMP/err.txt" || fail "no hint of --insecure-http"
echo "ok: a token is not sent over plain HTTP to another host (tests/agent/check_upload: unless --insecure-http)"

# ---- the upload over TLS ----
"$AGENT" push "$TMP/seed" --server "https://localhost:$LB_PORT" --cacert "$TMP/ca.pem" \
    >"$TMP/push.out" 2>"$TMP/push.err" || fail "push over TLS: $(cat "$TMP/push.err")"
[ "$(cat "$TMP/push.out")" = "$ID" ] || fail "push printed $(cat "$TMP/push.out")"
jq -r '.layers[] | "\(.index) \(.file)"' "$TMP/seed/run.json" >"$TMP/files"
while read -r index file; do
    curl -sf --cacert "$TMP/ca.pem" -o "$TMP/back.npy" \
        "https://localhost:$LB_PORT/api/v1/runs/$ID/layers/$index.npy" || fail "GET $index"
    cmp -s "$TMP/back.npy" "$TMP/seed/$file" || fail "layer $index differs after TLS"
done <"$TMP/files"
echo "ok: the seed run went up over HTTPS with the test CA and comes back byte for byte"
