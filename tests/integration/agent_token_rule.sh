#!/bin/sh
# The agent's token rule, end to end (issue 25 items 1 and 2; docs/AGENT.md, "push", TLS):
# every command that can send a token (push, run --server, sweep --server, fetch-layers,
# submit, serve, replay with and without --push, outbox) is pointed at a recording listener
# on 127.0.0.1 (token_listener.py) through URLs that libcurl connects to that listener but
# that name no loopback host in libcurl's own parse: 0.0.0.0 (which Linux routes to the
# local host) with a '?@127.0.0.1', '#@127.0.0.1' or '/?@127.0.0.1' after it, an upper-case
# scheme, a user name before an '@'. Each must be refused before any request (exit 2), and
# the listener must have seen no Authorization header. The same push to
# http://127.0.0.1:PORT does reach it with the header: the listener records what comes.
# Before the fix, '?@' and '#@' sent the token to 0.0.0.0, and replay sent $GPUDIFF_TOKEN to
# any http:// host.
. ./tests/integration/env.sh
need_seed
command -v python3 >/dev/null || skip "python3 is not installed (deploy/setup.sh)"

LISTENER=""
cleanup() {
    st=$?
    set +e
    if [ -n "$LISTENER" ]; then
        kill -TERM "$LISTENER" 2>/dev/null
        wait "$LISTENER" 2>/dev/null
    fi
    rm -rf "$TMP"
    exit "$st"
}
trap cleanup EXIT

python3 "$GD_SRCDIR/tests/integration/token_listener.py" "$TMP/port" "$TMP/requests.log" &
LISTENER=$!
tries=0
while [ ! -f "$TMP/port" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 100 ] || fail "the listener did not start"
    sleep 0.1
done
P=$(cat "$TMP/port")
: >"$TMP/requests.log"
GPUDIFF_TOKEN=gd_this_token_must_not_travel_AAAAAAAAAAAAAAAAAAAAAAAA
export GPUDIFF_TOKEN

# A bundle of one small layer (bundle needs no server), and a model and input for the rest.
python3 - "$TMP/dump" <<'PY'
import os, struct, sys
os.makedirs(sys.argv[1])
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
head += " " * (64 - 10 - len(head) - 1) + "\n"
with open(os.path.join(sys.argv[1], "out.npy"), "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    f.write(struct.pack("<4f", 1, 2, 3, 4))
PY
"$AGENT" bundle --from "$TMP/dump" --out "$TMP/bundle" >/dev/null
RUN_ID=$(sed -n 's/.*"id": *"\([0-9a-f-]*\)".*/\1/p' "$TMP/bundle/run.json" | head -n 1)
[ -n "$RUN_ID" ] || fail "no run id in the bundle"
MODEL=$SEED_MODEL
INPUT=$SEED_DIR/input.npz
mkdir -p "$TMP/outbox/outbox"
cp -r "$TMP/bundle" "$TMP/outbox/outbox/one"

# refused URL COMMAND...: exit 2 and nothing with a token at the listener.
n=0
refused() {
    url=$1
    shift
    n=$((n + 1))
    out="$TMP/o$n"
    set +e
    "$@" >"$TMP/out.txt" 2>"$TMP/err.txt"
    got=$?
    set -e
    [ "$got" = 2 ] || fail "$* exited $got, expected 2: $(cat "$TMP/err.txt")"
    if grep -q "auth=yes" "$TMP/requests.log"; then
        fail "$*: the token reached the listener: $(cat "$TMP/requests.log")"
    fi
}

for url in "http://0.0.0.0:$P?@127.0.0.1" "http://0.0.0.0:$P#@127.0.0.1" \
    "http://0.0.0.0:$P/?@127.0.0.1" "HTTP://0.0.0.0:$P/" "http://0.0.0.0:$P/" \
    "http://127.0.0.1@0.0.0.0:$P/" "http://x:y@127.0.0.1:$P/"; do
    refused "$url" "$AGENT" push "$TMP/bundle" --server "$url" --retries 0
    refused "$url" "$AGENT" run --model "$MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$INPUT" --input-key inp --out "$TMP/run$n" --server "$url" --retries 0
    refused "$url" "$AGENT" sweep --model "$MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$INPUT" --input-key inp --server "$url" --retries 0
    refused "$url" "$AGENT" fetch-layers --server "$url" "$RUN_ID" --retries 0
    refused "$url" "$AGENT" submit --server "$url" --model "$MODEL" --input "$INPUT" \
        --retries 0
    refused "$url" "$AGENT" serve --server "$url" --backend cpu --once \
        --cache "$TMP/cache" --work "$TMP/work"
    refused "$url" "$AGENT" replay --server "$url" "$RUN_ID" --model "$MODEL" \
        --out "$TMP/replay$n"
    refused "$url" "$AGENT" replay --server "$url" "$RUN_ID" --model "$MODEL" \
        --out "$TMP/replay$n" --push
    refused "$url" "$AGENT" outbox send "$TMP/outbox" --server "$url" --retries 0
    echo "ok: $url: refused by push, run, sweep, fetch-layers, submit, serve, replay (with and without --push) and outbox send"
done
[ ! -s "$TMP/requests.log" ] || fail "requests reached the listener: $(cat "$TMP/requests.log")"
echo "ok: $n commands refused, no request reached the listener"

# A token given on the command line is held to the same rule.
unset GPUDIFF_TOKEN
refused x "$AGENT" replay --server "http://0.0.0.0:$P" "$RUN_ID" --model "$MODEL" \
    --out "$TMP/replay-flag" --token gd_flag_token
# Without a token, replay reads from any http:// server (nothing secret travels) ...
set +e
"$AGENT" replay --server "http://0.0.0.0:$P" "$RUN_ID" --model "$MODEL" \
    --weights-dir "$SEED_DIR/initializer" --out "$TMP/replay-anon" >/dev/null 2>"$TMP/err.txt"
got=$?
set -e
[ "$got" = 3 ] || [ "$got" = 8 ] || fail "an anonymous replay exited $got: $(cat "$TMP/err.txt")"
grep -q "GET /api/v1/runs/$RUN_ID auth=no" "$TMP/requests.log" ||
    fail "the anonymous replay did not reach the listener: $(cat "$TMP/requests.log")"
# ... and --insecure-http lets a token go where the user says the network is trusted.
set +e
"$AGENT" push "$TMP/bundle" --server "http://0.0.0.0:$P" --insecure-http --retries 0 \
    --token gd_trusted >/dev/null 2>&1
set -e
grep -q "POST /api/v1/runs auth=yes" "$TMP/requests.log" ||
    fail "--insecure-http did not send the token: $(cat "$TMP/requests.log")"
: >"$TMP/requests.log"

# The control: a loopback URL, and the listener sees the token.
export GPUDIFF_TOKEN=gd_loopback
expect_exit 8 "$AGENT" push "$TMP/bundle" --server "http://127.0.0.1:$P/" --retries 0
grep -q "POST /api/v1/runs auth=yes" "$TMP/requests.log" ||
    fail "the listener did not record the loopback push: $(cat "$TMP/requests.log")"
expect_exit 3 "$AGENT" replay --server "http://localhost:$P" "$RUN_ID" --model "$MODEL" \
    --weights-dir "$SEED_DIR/initializer" --out "$TMP/replay-lo"
grep -q "GET /api/v1/runs/$RUN_ID auth=yes" "$TMP/requests.log" ||
    fail "replay to localhost sent no token: $(cat "$TMP/requests.log")"
echo "ok: to 127.0.0.1 and localhost the token goes, as the listener records"
