#!/bin/sh
# Every knob of engine/core/knobs.def through run, run.json and the rerun record (issue 23
# item 2): for each knob a value other than its default, made from the table's own columns
# (kind, values, backends) by this script's rules. On cpu and cpu64 a knob they take is run
# on a slice of the seed case; run.json's "knobs" must record it in its one spelling; the
# run's "rerun" arguments are run again, and the second bundle must equal the first bit for
# bit (every layer file, every layer's sha256 and fingerprint, the knobs). A knob only cuda
# takes is parsed and then refused on cpu with GD_ENOTSUP (exit 5), naming its backend.
. ./tests/integration/env.sh
need_seed
need_numpy

"$PYTHON_NUMPY" - "$SEED_DIR/input.npz" "$TMP/x.npy" <<'PY'
import sys
import numpy as np
np.save(sys.argv[2], np.load(sys.argv[1])["inp"][:48])
PY
# One line per knob: NAME BACKEND VALUE WANT (WANT: run.json's record, "-" for a refusal).
"$PYTHON_NUMPY" - "$GD_SRCDIR/engine/core/knobs.def" >"$TMP/cases.txt" <<'PY'
import re, sys
rows = re.findall(r'^GD_KNOB\(\s*(\w+),\s*(\w+),\s*(\w+),\s*\d+,\s*"([^"]*)",\s*"([^"]*)",'
                  r'\s*"([^"]*)"', open(sys.argv[1]).read(), re.M)
assert len(rows) >= 13, rows
for enum, name, kind, values, default, backends in rows:
    words = values.split("|")
    if kind == "ONOFF":
        value = "on" if default == "off" else "off"
        want = value
    elif kind == "EMULATE":
        value, want = "bf16:gemm+conv", "bf16:conv+gemm"
    elif kind == "COUNT":
        value = want = "3"
    elif kind == "ROWS":
        value = want = "16"
    elif kind == "MIB":
        value = want = "64"
    elif kind == "BYTES":
        value, want = "2K", "2048"
    elif name == "dtype":
        value = want = "float16"
    elif name == "capture":
        value = want = "layers=fc*,output"
    elif kind == "CHOICE":
        value = want = [w for w in words if w != default and not re.search(r"[:=][A-Z]", w)][0]
    elif kind == "TEXT":
        value = want = "conv1=1"
    else:
        raise SystemExit("a knob kind this test does not know: %s %s" % (name, kind))
    if backends == "" or "cpu" in backends.split():
        backend = "cpu"
    elif "cpu64" in backends.split():
        backend = "cpu64"
    else:
        backend, want = "cpu", "-"  # cuda only: refused on cpu
    print(name, backend, value, want)
PY
cat "$TMP/cases.txt"
n=0
refused=0
while read -r name backend value want; do
    flag="--$(echo "$name" | tr _ -)"
    if [ "$want" = "-" ]; then
        expect_exit 5 "$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
            --input "$TMP/x.npy" "$flag" "$value" --out "$TMP/refused"
        grep -q -- "$flag is for the cuda backend, not cpu" "$TMP/err.txt" ||
            fail "$flag $value on cpu: not refused as a cuda knob"
        [ ! -e "$TMP/refused" ] || fail "$flag: a refused run left a bundle"
        echo "ok: $flag $value refused on cpu (GD_ENOTSUP)"
        refused=$((refused + 1))
        continue
    fi
    a="$TMP/$name-a"
    b="$TMP/$name-b"
    "$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" --input "$TMP/x.npy" \
        --backend "$backend" "$flag" "$value" --out "$a" >/dev/null 2>"$TMP/run.err" ||
        fail "run $flag $value: exit $?: $(cat "$TMP/run.err")"
    # the rerun record, as fetch-layers reads it, run as it is
    jq -r '.rerun.args[]' "$a/run.json" >"$TMP/args.txt"
    set --
    while IFS= read -r arg; do set -- "$@" "$arg"; done <"$TMP/args.txt"
    "$AGENT" run "$@" --out "$b" >/dev/null 2>"$TMP/rerun.err" ||
        fail "rerun of $flag $value: exit $?: $(cat "$TMP/rerun.err"); args: $*"
    "$PYTHON_NUMPY" - "$a" "$b" "$name" "$flag" "$want" <<'PY' || fail "$flag $value: see above"
import filecmp, json, os, sys
a, b, name, flag, want = sys.argv[1:]
ra, rb = (json.load(open(os.path.join(d, "run.json"))) for d in (a, b))
args = ra["rerun"]["args"]
got = ra["knobs"].get(name)
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL: %s %s: %s" % (flag, want, what))
        ok = False
check(str(got) == want, "run.json's knobs.%s is %r" % (name, got))
check(flag in args and args[args.index(flag) + 1] == want,
      "the rerun record lacks %s %s: %s" % (flag, want, args))
check(ra["knobs"] == rb["knobs"], "the knobs differ: %s / %s" % (ra["knobs"], rb["knobs"]))
check(ra["rerun"] == rb["rerun"], "the reruns' own records differ")
check(len(ra["layers"]) == len(rb["layers"]) and len(ra["layers"]) > 0, "layer counts")
files = 0
for la, lb in zip(ra["layers"], rb["layers"]):
    for key in ("name", "dtype", "shape", "sha256", "fingerprint", "file"):
        check(la.get(key) == lb.get(key), "layer %s: %s differs" % (la["name"], key))
    if la.get("file"):
        files += 1
        check(filecmp.cmp(os.path.join(a, la["file"]), os.path.join(b, lb["file"]), shallow=False),
              "layer %s: the files differ" % la["name"])
print("ok: %s %s: recorded as %r, the rerun's %d layers (%d files) are the same bits"
      % (flag, want, got, len(ra["layers"]), files))
sys.exit(0 if ok else 1)
PY
    n=$((n + 1))
done <"$TMP/cases.txt"
[ "$((n + refused))" = "$(wc -l <"$TMP/cases.txt")" ] && [ "$n" -ge 6 ] && [ "$refused" -ge 7 ] ||
    fail "$n knobs run and $refused refused of $(wc -l <"$TMP/cases.txt")"
# the case of the issue: a float16 run's rerun computes in float16
jq -e '.knobs.dtype == "float16" and ([.layers[] | .dtype] | all(. == "float16"))' \
    "$TMP/dtype-b/run.json" >/dev/null || fail "the float16 run's rerun is not float16"
echo "ok: every knob of knobs.def: $n run and rerun bit for bit, $refused (cuda's) refused on cpu"
