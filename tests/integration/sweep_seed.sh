#!/bin/sh
# `gpudiff-agent sweep` on the seed case over CPU emulation formats and batch sizes (issue
# 11's "must show" without a GPU): TF32 emulation on the GEMMs starts the difference from
# float64 at fc1 and the Floor (relu4) amplifies it; the plain cpu setting is within rounding
# noise of float64, deterministic and batch-invariant; the report says so in words; the
# document holds what the schema promises; bad command lines exit 2.
. ./tests/integration/env.sh
need_seed
need_numpy
sweep() {
    "$AGENT" sweep --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" \
        --input "$SEED_DIR/input.npz" --input-key inp "$@"
}
GRID='emulate=none,tf32,bf16:conv+gemm;batch=1,250,all'
"$PYTHON_NUMPY" -c "import numpy
numpy.save('$TMP/x.npy', numpy.load('$SEED_DIR/input.npz')['inp'][:100])"
sweep --grid "$GRID" --repeats 3 --captures 2 --json --out "$TMP/out" >"$TMP/sweep.json" \
    2>"$TMP/progress.txt"
cat "$TMP/progress.txt"
grep -q '\[3/3\] emulate=bf16:conv+gemm: .* left, about' "$TMP/progress.txt" ||
    fail "no progress line for the last setting"
"$AGENT" sweep --report "$TMP/out/sweep.json" >"$TMP/report.txt"
cat "$TMP/report.txt"
[ -s "$TMP/out/sweep.json" ] || fail "--out wrote no sweep.json"
# the bundles --out wrote are ordinary bundles: `diff` reads them
"$AGENT" diff "$TMP/out/01-emulate-tf32-gemm" "$TMP/out/float64" --json >"$TMP/diff.json"

"$PYTHON_NUMPY" - "$TMP" "$GD_SRCDIR" <<'PY'
import json, sys
tmp = sys.argv[1]
d = json.load(open(tmp + "/sweep.json"))
report = open(tmp + "/report.txt").read()
diff = json.load(open(tmp + "/diff.json"))
failed = []
def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed.append(what)

check(d["format"] == "gpudiff-sweep" and d["version"] == 1, "format and version")
try:
    import jsonschema
except ImportError:
    jsonschema = None
    print("skip the schema check: no python3-jsonschema (deploy/setup.sh installs it)")
if jsonschema is not None:
    schema = json.load(open(sys.argv[2] + "/schema/json/sweep.schema.json"))
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(d), key=str)
    check(not errors, "the document follows schema/json/sweep.schema.json%s" %
          ("" if not errors else ": " + "; ".join("%s at %s" % (e.message, list(e.path))
                                                  for e in errors[:3])))
check(d["backend"] == "cpu" and d["reference_batch"] == 1000, "backend cpu, reference batch 1000")
check(d["batch_sizes"] == [1, 250], "batch sizes 1 and 250 besides the whole (got %s)" % d["batch_sizes"])
check(d["float64"]["status"] == "ok" and d["float64"]["backend"] == "cpu64", "the float64 run ran")
s = {x["name"]: x for x in d["settings"]}
check(list(s) == ["defaults", "emulate=tf32:gemm", "emulate=bf16:conv+gemm"],
      "the settings, strict first (got %s)" % list(s))
none, tf32, bf16 = s["defaults"], s["emulate=tf32:gemm"], s["emulate=bf16:conv+gemm"]
for x in d["settings"]:
    check(x["status"] == "ok", "%s ran" % x["name"])
    t = x["time"]
    check(t["forward_ms"] > 0 and t["end_to_end_ms"] > 0 and t["repeats"] == 3 and
          t["forward_min_ms"] <= t["forward_ms"] <= t["forward_max_ms"],
          "%s: times %.3f ms forward, %.3f ms end to end" % (x["name"], t["forward_ms"], t["end_to_end_ms"]))
    check(t["forward_timer"] == "wall clock", "%s: cpu forwards are timed by the wall clock" % x["name"])
    check(x["run_to_run"]["captures"] == 2 and x["run_to_run"]["outputs_runs"] == 3,
          "%s: 2 captures, 3 timed outputs compared" % x["name"])
    check([b["batch"] for b in x["batch"]["sizes"]] == [1, 250], "%s: both batch sizes ran" % x["name"])
    check(t["end_to_end_min_ms"] <= t["end_to_end_ms"] <= t["end_to_end_max_ms"],
          "%s: the end-to-end range holds its median" % x["name"])
# the emulations are what-ifs: only defaults is a setting to deploy, and every time is
# against it
check([x["name"] for x in d["settings"] if x["what_if"]] == ["emulate=tf32:gemm", "emulate=bf16:conv+gemm"]
      and d["answers"]["what_ifs"] == ["emulate=tf32:gemm", "emulate=bf16:conv+gemm"],
      "the emulations are what-ifs, defaults is not")
fastest = none["time"]["forward_ms"]
for x in d["settings"]:
    check(abs(x["time"]["x_fastest"] - x["time"]["forward_ms"] / fastest) < 1e-6,
          "%s: x fastest is its ms over the fastest deployable's" % x["name"])
    ov = max(x["time"]["forward_min_ms"], none["time"]["forward_min_ms"]) <= \
        min(x["time"]["forward_max_ms"], none["time"]["forward_max_ms"])
    check(x["time"]["within_noise_of_fastest"] == ov,
          "%s: within noise of the fastest exactly when the ranges overlap" % x["name"])

# the cpu backend: deterministic, batch-invariant, float32 noise against float64
check(none["strict"] and not none["added"], "defaults (emulate=none) is the strict setting, from the grid")
check(none["deterministic"] is True, "cpu is deterministic")
check(none["run_to_run"]["layers_identical"] is True and none["run_to_run"]["outputs_identical"] is True,
      "cpu: every layer of both captures and every timed output bitwise equal")
check(none["batch_invariant"] is True, "cpu is batch-invariant")
for b in none["batch"]["sizes"]:
    check(b["identical"] and b["differing_layers"] == [] and b["algo_changes"] == [],
          "cpu at batch %d: every layer bitwise identical to the whole batch" % b["batch"])
v = none["vs_float64"]
check(v["compared"] and v["first_divergent"] is None and v["layers_divergent"] == 0,
      "cpu against float64: no divergent layer")
check(0 < v["output"]["max_abs"] < 1e-6, "cpu against float64: output within %.3g" % v["output"]["max_abs"])
check(none["vs_strict"]["compared"] is False, "the strict setting is not compared with itself")

# TF32 emulation: fc1 starts it, the Floor amplifies it (issue 3's finding, from a sweep)
v = tf32["vs_float64"]
check(v["first_divergent"] is not None and v["first_divergent"]["layer"] == "fc1",
      "tf32: first divergent against float64 is fc1 (got %s)" % v["first_divergent"])
check(9.5 <= v["first_divergent"]["bits"] <= 12, "tf32: fc1 at TF32's 10-11 bits (%.2f)" % v["first_divergent"]["bits"])
amps = [(a["layer"], a["op"]) for a in v["amplifiers"]]
check(amps == [("relu4", "Floor")], "tf32: the Floor relu4 is the amplifier (got %s)" % amps)
check(v["amplifiers"][0]["flipped"] > 0, "tf32: the Floor flips outputs")
check(v["output"]["max_abs"] > 0.01, "tf32: the output moves by %.3g" % v["output"]["max_abs"])
check("fc1" in tf32["cause"] and "relu4 (Floor)" in tf32["cause"], "tf32: the cause names fc1 and the Floor")
check(tf32["vs_strict"]["identical"] is False, "tf32 differs from strict")
check(tf32["deterministic"] is True and tf32["batch_invariant"] is True,
      "tf32 emulation is still deterministic and batch-invariant on cpu")
check(bf16["vs_float64"]["first_divergent"]["layer"] == "conv1",
      "bf16 on convolutions too starts at conv1")
# the same comparison through `gpudiff-agent diff` on the bundles --out wrote
check(diff["first_divergent"] == "fc1" and diff["amplifiers"] == ["relu4"],
      "diff of the written bundles agrees: fc1, relu4")

a = d["answers"]
for k in ("fastest", "cheapest_deterministic", "cheapest_batch_invariant",
          "cheapest_deterministic_and_batch_invariant"):
    check(a[k]["setting"] == "defaults",
          "%s is defaults, never an emulation (got %s)" % (k, a[k]["setting"]))
    check(a[k]["forward_min_ms"] <= a[k]["forward_ms"] <= a[k]["forward_max_ms"] and
          0 < a[k]["vs_float64_max_abs"] < 1e-6, "%s: its range and its error against float64" % k)
check(sorted(a["differ_from_strict"]) == ["emulate=bf16:conv+gemm", "emulate=tf32:gemm"],
      "the emulations change the results")
tm = d["timing"]
check(0 < tm["engine_s"] < tm["total_s"] and 0 < tm["compare_s"] < tm["total_s"] and
      0 <= tm["capture_handling_s"] <= tm["overhead_s"] < tm["total_s"],
      "timing: engine %.2f s, comparisons %.2f s, capture handling %.2f s within the overhead "
      "%.2f s, of %.2f s" % (tm["engine_s"], tm["compare_s"], tm["capture_handling_s"],
                            tm["overhead_s"], tm["total_s"]))

# the report, in words
check("emulate=tf32:gemm (what-if): the difference from float64 starts at fc1 (Gemm)" in report,
      "the report: TF32 emulation starts at fc1")
check("relu4 (Floor) amplifies it" in report, "the report names the Floor as the amplifier")
check("The batch size moves nothing" in report, "the report: the batch size moves nothing")
check("Run to run nothing moves" in report, "the report: nothing moves run to run")
check("Within rounding noise of float64 at every layer: defaults" in report,
      "the report: defaults (emulate=none) is rounding noise")
flat = " ".join(report.split())
prevent = flat[flat.index("How to prevent it?"):flat.index("What does it cost?")]
check("emulate=" not in prevent.split("What if?")[0],
      "the report: the prevention advice names no emulation")
check("What if? (emulated on the CPU: not settings a deployment can use, never advised as a fix)"
      in prevent and "emulate=bf16:conv+gemm: the output would move by" in prevent,
      "the report: the emulations are what-ifs, labelled so")
check(("(%.3f to %.3f)" % (none["time"]["forward_min_ms"], none["time"]["forward_max_ms"])) in flat,
      "the report shows the timing range")
line = [l for l in report.splitlines() if l.startswith("defaults ")]
check(len(line) == 1 and "| identical  | yes" in line[0] and " deploy " in line[0],
      "the table: defaults deployable, identical, batch-invariant")
line = [l for l in report.splitlines() if l.startswith("emulate=tf32:gemm ")]
check(len(line) == 1 and " what-if " in line[0], "the table: tf32 emulation marked what-if")
sys.exit(1 if failed else 0)
PY

# The issue's four sweeps: the default cpu grid's advice, sweep after sweep, on a loaded
# machine: the same (defaults), whatever the timings did
for k in 1 2 3; do
    "$AGENT" sweep --model "$SEED_MODEL" --weights-dir "$SEED_DIR/initializer" --input "$TMP/x.npy" \
        --repeats 3 --warmup 0 --captures 2 --quiet --json \
        --grid 'emulate=none,tf32,bf16,fp16;batch=50,all' >"$TMP/again$k.json"
done
for k in 1 2 3; do
    jq -r '[.answers.fastest.setting, .answers.cheapest_deterministic.setting,
        .answers.cheapest_deterministic_and_batch_invariant.setting] | join(" ")' "$TMP/again$k.json"
done | sort -u >"$TMP/answers.txt"
[ "$(cat "$TMP/answers.txt")" = "defaults defaults defaults" ] ||
    fail "three sweeps gave these answers: $(cat "$TMP/answers.txt")"
echo "ok: three sweeps, one answer: defaults"

# bad command lines
expect_exit 2 sweep --grid 'tf32=on'
grep -q 'not for the cpu backend' "$TMP/err.txt" || fail "no message for a cuda axis on cpu"
expect_exit 2 sweep --repeats 0
expect_exit 2 "$AGENT" sweep --input "$SEED_DIR/input.npz"
expect_exit 3 "$AGENT" sweep --model "$TMP/none.json" --input "$SEED_DIR/input.npz"
expect_exit 3 "$AGENT" sweep --report "$SEED_MODEL"
grep -q 'not a sweep document' "$TMP/err.txt" || fail "--report of a model file"
expect_exit 2 "$AGENT" sweep --report "$TMP/out/sweep.json" --grid 'emulate=none'
expect_exit 6 sweep --grid 'emulate=none;batch=all' --repeats 1 --captures 1 --out "$TMP/out"
"$AGENT" sweep --help | grep -q 'conv_algo=heuristic,autotune,deterministic;tf32=off,on' ||
    fail "--help does not give the default cuda grid"
echo "PASS"
