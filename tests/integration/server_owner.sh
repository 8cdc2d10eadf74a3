#!/bin/sh
# Runs belong to the token that created them (issue 25 item 4; docs/SERVER.md, "Ownership"):
# agent B may not post agent A's run.json again, send its layers, finish it, or attach a
# replay to it (403, each refusal logged with B's token id and never the token); A may, and
# so may an admin; readers still read. A replay B attached to a run before it existed is
# not used by the diff of A's runs (tests/server/check_db_replays shows the lookup). Runs on
# SQLite here and on PostgreSQL in server_pg.sh.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
command -v python3 >/dev/null || skip "python3 is not installed (deploy/setup.sh)"
server_start

A=$(token agent)
B=$(token agent)
ADMIN=$(token admin)
B_ID=$("$GPUDIFFD" token list --db "$DB" 2>/dev/null |
    awk -v h="$(printf '%.7s' "$B")" '$3 == h {print $1}')
[ -n "$B_ID" ] || fail "no id for token B in: $("$GPUDIFFD" token list --db "$DB")"

# run NAME VALUE [REPLAY_OF]: a bundle of one layer in $TMP/NAME (run.json's replay set)
run() {
    python3 - "$TMP/dump-$1" "$2" <<'PY'
import os, struct, sys
os.makedirs(sys.argv[1])
head = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
head += " " * (64 - 10 - len(head) - 1) + "\n"
v = float(sys.argv[2])
with open(os.path.join(sys.argv[1], "out.npy"), "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(head)) + head.encode())
    f.write(struct.pack("<4f", v, v + 1, v + 2, v + 3))
PY
    "$AGENT" bundle --from "$TMP/dump-$1" --out "$TMP/$1" --model owner-test >/dev/null
    if [ -n "${3:-}" ]; then
        jq --arg of "$3" '. + {replay: {of: $of, inputs: "captured"}}' "$TMP/$1/run.json" \
            >"$TMP/$1/run.json.new"
        mv "$TMP/$1/run.json.new" "$TMP/$1/run.json"
    fi
}
post() { # TOKEN NAME: POST its run.json
    api POST /api/v1/runs -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
        --data-binary @"$TMP/$2/run.json"
}
put() { # TOKEN NAME: PUT its layer 0
    api PUT "/api/v1/runs/$(jq -r .id "$TMP/$2/run.json")/layers/0" \
        -H "Authorization: Bearer $1" -T "$TMP/$2/$(jq -r '.layers[0].file' "$TMP/$2/run.json")"
}
finish() { # TOKEN NAME
    api POST "/api/v1/runs/$(jq -r .id "$TMP/$2/run.json")/finish" -H "Authorization: Bearer $1"
}
is() { # WANT GOT WHAT
    [ "$2" = "$1" ] || fail "$3: $2, expected $1: $(head -c 400 "$TMP/body")"
}

run ra 1
RA=$(jq -r .id "$TMP/ra/run.json")
is 201 "$(post "$A" ra)" "A creates its run"
is 403 "$(post "$B" ra)" "B posts A's run.json again"
jq -e '.error.code == "forbidden"' "$TMP/body" >/dev/null || fail "not forbidden: $(cat "$TMP/body")"
is 403 "$(put "$B" ra)" "B sends a layer of A's run"
is 403 "$(finish "$B" ra)" "B finishes A's run"
is 200 "$(post "$A" ra)" "A posts its run.json again (a retry)"
is 201 "$(put "$A" ra)" "A sends its layer"
is 403 "$(finish "$B" ra)" "B finishes A's run once its layers are in"
expect 404 GET "/api/v1/runs/$RA"
is 200 "$(finish "$A" ra)" "A finishes its run"
expect 200 GET "/api/v1/runs/$RA"
echo "ok: agent B may not post again, send layers to or finish agent A's run; A may"

# An admin may finish another token's run.
run ra2 2
is 201 "$(post "$A" ra2)" "A creates a second run"
is 201 "$(put "$A" ra2)" "A sends its layer"
is 200 "$(finish "$ADMIN" ra2)" "an admin finishes A's run"
echo "ok: an admin may finish a run of another token"

# A replay of A's run: B may not attach one; A may.
run rb 3 "$RA"
is 403 "$(post "$B" rb)" "B attaches a replay to A's run"
run rc 4 "$RA"
is 201 "$(post "$A" rc)" "A attaches a replay to its own run"
echo "ok: only the owner of a run attaches a replay to it"

# Each refusal is logged with B's token id and role, never with the token.
grep -q "refused: token $B_ID (role agent) may not finish run $RA" "$SERVER_LOG" ||
    fail "no refusal naming token $B_ID: $(grep refused "$SERVER_LOG" | tail -3)"
grep -q "refused: token $B_ID (role agent) may not send layers to run $RA" "$SERVER_LOG" ||
    fail "no refusal of the layer"
grep -q "refused: token $B_ID (role agent) may not attach a replay to run $RA" "$SERVER_LOG" ||
    fail "no refusal of the replay"
n=$(grep -c "refused: token $B_ID" "$SERVER_LOG")
[ "$n" = 5 ] || fail "$n refusals logged, expected 5"
! grep -q -e "$B" -e "$A" -e "$ADMIN" "$SERVER_LOG" || fail "a token is in the log"
echo "ok: 5 refusals logged with token id $B_ID, no token in the log"
