#!/bin/sh
# The upload folder of deploy/systemd/gpudiff-agent.service (issue 25 item 5; docs/AGENT.md,
# "outbox"): the unit's own ExecStart line (taken from the unit file, systemd's $$ and %%
# undone, run as systemd would with STATE_DIRECTORY and the EnvironmentFile's variables)
# pushes three bundles of which the middle one has a layer whose bytes do not match its
# sha256: the daemon refuses it (400 hash_mismatch), it moves to refused/ with the
# daemon's reason, and the one after it is sent all the same (before, the unit stopped at
# the refused bundle on every trigger and the good one behind it was never sent).
# `gpudiff-agent outbox DIR` lists what waits and what was refused; a refused token (exit
# 9) and a daemon that is down (exit 8) stop the pass with the bundles left waiting;
# `outbox retry` puts a refused bundle back.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
command -v python3 >/dev/null || skip "python3 is not installed (deploy/setup.sh)"
server_start

# bundle NAME VALUE: a bundle of one layer of four float32 values in $TMP/made/NAME
bundle() {
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
    "$AGENT" bundle --from "$TMP/dump-$1" --out "$TMP/made/$1" --model outbox-test >/dev/null
}
mkdir -p "$TMP/made" "$TMP/state/outbox"
bundle a-good 1
bundle b-bad 10
bundle c-good 20
# b-bad: its layer's data no longer hashes to the sha256 its run.json records
python3 - "$TMP/made/b-bad/layers" <<'PY'
import os, sys
d = sys.argv[1]
f = os.path.join(d, os.listdir(d)[0])
b = bytearray(open(f, "rb").read())
b[-1] ^= 0x40
open(f, "wb").write(bytes(b))
PY
for b in a-good b-bad c-good; do mv "$TMP/made/$b" "$TMP/state/outbox/"; done
ID_A=$(jq -r .id "$TMP/state/outbox/a-good/run.json")
ID_C=$(jq -r .id "$TMP/state/outbox/c-good/run.json")

# The unit's ExecStart as systemd runs it: $$ is $, %% is %, the binary of this build.
sed -n 's/^ExecStart=//p' "$GD_SRCDIR/deploy/systemd/gpudiff-agent.service" |
    sed -e 's/\$\$/$/g' -e 's/%%/%/g' -e "s|/usr/local/bin/|$GD_BUILDDIR/|g" >"$TMP/exec.sh"
grep -q "outbox" "$TMP/exec.sh" || fail "no ExecStart line in gpudiff-agent.service"
unit() {
    (
        STATE_DIRECTORY="$TMP/state:$TMP/state/outbox:$TMP/state/sent:$TMP/state/refused"
        GPUDIFF_SERVER=$URL
        GPUDIFF_TOKEN=$1
        export STATE_DIRECTORY GPUDIFF_SERVER GPUDIFF_TOKEN
        eval "$(cat "$TMP/exec.sh")"
    )
}
TOKEN=$(token agent)
set +e
unit "$TOKEN" 2>"$TMP/unit.err"
st=$?
set -e
cat "$TMP/unit.err"
[ "$st" = 0 ] || fail "the unit's pass exited $st"
[ -d "$TMP/state/sent/a-good" ] && [ -d "$TMP/state/sent/c-good" ] ||
    fail "the good bundles were not all sent: $(ls "$TMP/state/sent" "$TMP/state/outbox")"
[ -d "$TMP/state/refused/b-bad" ] || fail "the refused bundle did not move to refused/"
[ -z "$(ls "$TMP/state/outbox")" ] || fail "bundles left waiting: $(ls "$TMP/state/outbox")"
grep -q "^status: 400$" "$TMP/state/refused/b-bad.reason" ||
    fail "no status in the reason: $(cat "$TMP/state/refused/b-bad.reason")"
grep -q "^reason: PUT layer 0 .*hash_mismatch" "$TMP/state/refused/b-bad.reason" ||
    fail "not the daemon's reason: $(cat "$TMP/state/refused/b-bad.reason")"
grep -q "^request: agt-" "$TMP/state/refused/b-bad.reason" || fail "no request id in the reason"
expect 200 GET "/api/v1/runs/$ID_A"
expect 200 GET "/api/v1/runs/$ID_C"
echo "ok: the unit sent a-good and c-good, moved b-bad aside: $(sed -n 's/^reason: //p' "$TMP/state/refused/b-bad.reason")"

# outbox list: what waits (nothing) and what was refused, with why
"$AGENT" outbox "$TMP/state" >"$TMP/list.txt"
head -n 1 "$TMP/list.txt" | grep -q "^0 waiting, 1 refused, 2 sent in " ||
    fail "list: $(cat "$TMP/list.txt")"
grep -q "^refused  b-bad  20[0-9-]*T[0-9:]*Z  400  PUT layer 0" "$TMP/list.txt" ||
    fail "list: $(cat "$TMP/list.txt")"
"$AGENT" outbox list "$TMP/state" --json >"$TMP/list.json"
jq -e '.waiting == [] and .sent == 2 and (.refused | length) == 1 and .refused[0].name == "b-bad"
    and .refused[0].status == 400 and (.refused[0].reason | test("hash_mismatch"))
    and (.refused[0].request | startswith("agt-"))' "$TMP/list.json" >/dev/null ||
    fail "list --json: $(cat "$TMP/list.json")"
"$AGENT" outbox --help | grep -q "outbox send DIR" || fail "no outbox --help"
echo "ok: outbox list names the refused bundle and the daemon's reason"

# A refused token stops the pass: nothing moves, exit 9.
bundle d-next 30
mv "$TMP/made/d-next" "$TMP/state/outbox/"
expect_exit 9 "$AGENT" outbox send "$TMP/state" --server "$URL" \
    --token gd_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA
[ -d "$TMP/state/outbox/d-next" ] || fail "a bundle moved although the token was refused"
[ ! -e "$TMP/state/refused/d-next" ] || fail "a bundle was refused for the token"
# A daemon that is down: exit 8, the bundle waits.
server_stop
expect_exit 8 "$AGENT" outbox send "$TMP/state" --server "$URL" --token "$TOKEN" --retries 0
[ -d "$TMP/state/outbox/d-next" ] || fail "a bundle moved although the daemon was down"
echo "ok: a refused token (9) and a daemon that is down (8) leave the bundles waiting"

# retry: the refused bundle goes back to the outbox, its reason file away
"$AGENT" outbox retry "$TMP/state" b-bad >/dev/null
[ -d "$TMP/state/outbox/b-bad" ] && [ ! -e "$TMP/state/refused/b-bad.reason" ] ||
    fail "retry did not move b-bad back"
"$AGENT" outbox "$TMP/state" | head -n 1 | grep -q "^2 waiting, 0 refused, 2 sent" ||
    fail "after retry: $("$AGENT" outbox "$TMP/state")"
expect_exit 2 "$AGENT" outbox retry "$TMP/state" ../x
echo "ok: outbox retry puts a refused bundle back"
