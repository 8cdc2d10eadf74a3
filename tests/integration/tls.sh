# tests/integration/tls.sh: what the scripts of gpudiffd's own TLS share, sourced after
# server.sh: a test CA and a server certificate made with openssl, and a daemon started on
# them (--tls-cert, --tls-key).
command -v openssl >/dev/null || skip "openssl is not installed (deploy/setup.sh installs it)"

# tls_certs: in $TMP, ca.pem (a CA, its key ca.key), other.pem (a second CA), server.pem and
# server.key (RSA 2048, for the name "localhost" only, signed by ca.pem), other.key (the key
# of other.pem, which is not server.pem's).
tls_certs() {
    (
        cd "$TMP"
        for ca in ca other; do
            openssl req -x509 -newkey rsa:2048 -nodes -keyout "$ca.key" -out "$ca.pem" -days 2 \
                -subj "/CN=gpudiff test $ca" >/dev/null 2>&1 || fail "openssl: CA $ca"
        done
        openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr \
            -subj "/CN=localhost" >/dev/null 2>&1 || fail "openssl: request"
        printf 'subjectAltName = DNS:localhost\nextendedKeyUsage = serverAuth\n' >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
            -extfile server.ext -out server.pem >/dev/null 2>&1 || fail "openssl: signing"
    )
}

# tls_server_start [gpudiffd flags...]: starts the daemon on $DB with server.pem and
# server.key, waits until https://localhost:PORT/healthz answers (verified with ca.pem) and
# sets URL to it.
tls_server_start() {
    server_launch https --tls-cert "$TMP/server.pem" --tls-key "$TMP/server.key" "$@"
    PORT=$port
    URL="https://localhost:$port"
    curl -sf --cacert "$TMP/ca.pem" "$URL/healthz" >/dev/null ||
        fail "gpudiffd does not answer /healthz over TLS"
}
