#!/bin/sh
# `gpudiff-agent replay` on the seed case (issue 12, item 7), on the CPU: a cpu64 bundle
# replayed on cpu with TF32 emulated on the GEMMs shows fc1, fc2 and output each making a
# TF32-sized error of its own (9.5-12 bits) and every other layer none, relu3 and relu4
# included; the TF32 run against cpu64 with that replay names fc1 as the cause though its
# error spreads to the output and the Floor amplifies it; a plain cpu replay makes no error
# beyond any bound. A wrong model, a wrong input and a framework dump are refused. Through
# gpudiffd: the cpu64 run pulled from the daemon (the layers the replay reads, not the
# output), replayed and pushed; the daemon's diff of the TF32 run then uses the replay.
. ./tests/integration/env.sh
. "$GD_SRCDIR/tests/integration/server.sh"
need_seed
need_numpy
run() {
    name=$1; shift
    "$AGENT" run --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$SEED_DIR/input.npz" --input-key inp --out "$TMP/$name" "$@" >/dev/null
}
replay() {
    name=$1; shift
    "$AGENT" replay "$@" --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --out "$TMP/$name" >/dev/null
}
run cpu64 --backend cpu64
run tf32 --emulate tf32
replay rep_tf32 "$TMP/cpu64" --emulate tf32
replay rep_cpu "$TMP/cpu64"
"$AGENT" diff "$TMP/rep_tf32" "$TMP/cpu64"
"$AGENT" diff "$TMP/rep_tf32" "$TMP/cpu64" --json >"$TMP/replay.json"
"$AGENT" diff "$TMP/rep_cpu" "$TMP/cpu64" --json >"$TMP/replay_cpu.json"
"$AGENT" diff "$TMP/tf32" "$TMP/cpu64" --replay "$TMP/rep_tf32"
"$AGENT" diff "$TMP/tf32" "$TMP/cpu64" --replay "$TMP/rep_tf32" --json >"$TMP/with.json"

# Refusals: exit 3 (bad input) with the reason.
sed 's/"name"/ "name"/' "$SEED_MODEL" >"$TMP/other-model.json"
expect_exit 3 "$AGENT" replay "$TMP/cpu64" --model "$TMP/other-model.json" \
    --weights-dir "$SEED_DIR/initializer" --out "$TMP/x"
grep -q "is not the model run" "$TMP/err.txt" || fail "a different model file is not named"
"$PYTHON_NUMPY" -c "import numpy
numpy.save('$TMP/other.npy', numpy.zeros((1000, 1, 28, 28), 'float32'))"
expect_exit 3 "$AGENT" replay "$TMP/cpu64" --model "$SEED_MODEL" --input "$TMP/other.npy" \
    --weights-dir "$SEED_DIR/initializer" --out "$TMP/x"
grep -q "it must be the run's own input" "$TMP/err.txt" || fail "a different input"
"$AGENT" bundle --from "$SEED_DIR/pytorch_gpu/output.npz" --out "$TMP/pt" >/dev/null
expect_exit 3 "$AGENT" replay "$TMP/pt" --model "$SEED_MODEL" \
    --weights-dir "$SEED_DIR/initializer" --out "$TMP/x"
grep -q "a framework dump cannot be replayed" "$TMP/err.txt" || fail "a dump"
expect_exit 2 "$AGENT" replay "$TMP/cpu64" --model "$SEED_MODEL" --out "$TMP/x" --push
[ ! -e "$TMP/x" ] || fail "a refused replay left a bundle"

# Through the daemon.
AGENT_TOKEN=$(token agent)
GPUDIFF_TOKEN=$AGENT_TOKEN
export GPUDIFF_TOKEN
server_start
"$AGENT" push "$TMP/cpu64" --server "$URL" >/dev/null 2>&1 || fail "push cpu64"
"$AGENT" push "$TMP/tf32" --server "$URL" >/dev/null 2>&1 || fail "push tf32"
CPU64=$(jq -r .id "$TMP/cpu64/run.json")
TF32=$(jq -r .id "$TMP/tf32/run.json")
expect 200 GET "/api/v1/diff?a=$TF32&b=$CPU64"
jq -e '.replay == null' "$TMP/body" >/dev/null || fail "a replay before there is one"
"$AGENT" replay --server "$URL" "$CPU64" --emulate tf32 --input "$SEED_DIR/input.npz" \
    --input-key inp --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
    --out "$TMP/rep_pulled" --push --progress >/dev/null 2>"$TMP/pull.err" ||
    fail "replay --server: $(cat "$TMP/pull.err")"
pulled=$(grep -c "pulled layer" "$TMP/pull.err")
[ "$pulled" = 11 ] || fail "pulled $pulled layers, not the 11 the replay reads"
REP=$(jq -r .id "$TMP/rep_pulled/run.json")
expect 200 GET "/api/v1/diff?a=$TF32&b=$CPU64"
cp "$TMP/body" "$TMP/server_with.json"
# the replay against its own source: a replay diff by itself (it once took itself as the
# replay of the pair and answered 400 "run  replays no run")
expect 200 GET "/api/v1/diff?a=$REP&b=$CPU64"
cp "$TMP/body" "$TMP/server_self.json"
server_stop

"$PYTHON_NUMPY" - "$TMP" "$REP" <<'PY'
import json, sys
tmp, rep = sys.argv[1], sys.argv[2]
load = lambda n: json.load(open("%s/%s.json" % (tmp, n)))
failed = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed.append(what)

own_error = ("fc1", "fc2", "output")
d = load("replay")
layers = {l["name"]: l for l in d["layers"]}
check(d["mode"] == "replay", "replay vs cpu64: a replay diff (got %s)" % d["mode"])
check(d["cause"] == "fc1", "replay vs cpu64: fc1 is the first layer with its own error (got %s)"
      % d["cause"])
for name, l in layers.items():
    if name in own_error:
        check(l["verdict"] == "divergent" and 9.5 <= l["bits"] <= 12 and
              l["arithmetic"] == "TF32 or FP16",
              "replay vs cpu64: %s makes its own TF32 error (%s, %.2f bits)"
              % (name, l["verdict"], l["bits"]))
    else:
        check(l["verdict"] in ("identical", "noise"),
              "replay vs cpu64: %s makes none (%s)" % (name, l["verdict"]))
d = load("replay_cpu")
check(d["cause"] is None and all(l["verdict"] in ("identical", "noise") for l in d["layers"]),
      "cpu replay vs cpu64: no layer makes an error beyond its bound")

for label, d in (("agent", load("with")), ("daemon", load("server_with"))):
    layers = {l["name"]: l for l in d["layers"]}
    check(d["replay"] is not None and d["cause"] == "fc1",
          "%s: tf32 vs cpu64 with the replay: the cause is fc1 (got %s)" % (label, d["cause"]))
    check(d["amplifiers"] == ["relu4"], "%s: relu4 still amplifies it" % label)
    for name in own_error:
        check(layers[name]["own"]["verdict"] == "divergent",
              "%s: %s has its own error" % (label, name))
    for name in ("relu3", "relu4"):
        check(layers[name]["own"]["verdict"] in ("identical", "noise"),
              "%s: %s inherits its error, makes none (own: %s)"
              % (label, name, layers[name]["own"]["verdict"]))
    check("the cause" in d["explanation"], "%s: the explanation names the cause" % label)
check(load("server_with")["replay"]["id"] == rep, "daemon: the diff uses the pulled replay")
d = load("server_self")
check(d["mode"] == "replay" and d["cause"] == "fc1",
      "daemon: the replay against its source is a replay diff, cause fc1 (got %s, %s)"
      % (d["mode"], d["cause"]))
sys.exit(1 if failed else 0)
PY
