#!/bin/sh
# `gpudiff-agent sweep --report` on three sweep documents made on the H200 (the seed case at
# 1000 images and a ResNet-50 layout at 8 and at 32, the default cuda grid;
# docs/PERFORMANCE.md): the
# words say what the documents hold. Every expectation is computed here from the document
# itself by Python (the fastest setting and the strict setting's cost, each setting's first
# divergent layer against float64, the seed's Floor amplifier, the batch sizes' changes),
# never taken from the report's C code; and no empty "()" where no arithmetic is named.
. ./tests/integration/env.sh
need_numpy
fx="$GD_SRCDIR/tests/fixtures/sweep"
for doc in h200_seed h200_resnet50_b8 h200_resnet50_b32; do
    "$AGENT" sweep --report "$fx/$doc.json" >"$TMP/$doc.txt" 2>"$TMP/$doc.err" ||
        fail "sweep --report $doc.json: $(cat "$TMP/$doc.err")"
    "$PYTHON_NUMPY" - "$fx/$doc.json" "$TMP/$doc.txt" >"$TMP/$doc.check" 2>&1 <<'PY' ||
import json, re, sys
doc = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
flat = " ".join(text.split())  # the report wraps its sentences at 100 columns
bad = []
def want(cond, what):
    if not cond:
        bad.append(what)
ok = [s for s in doc["settings"] if s["status"] == "ok"]
fastest = min(ok, key=lambda s: s["time"]["forward_ms"])
want("The fastest setting is %s: %.3f ms" % (fastest["name"], fastest["time"]["forward_ms"])
     in flat, "the fastest setting %s" % fastest["name"])
strict = [s for s in ok if s.get("strict")][0]
ratio = strict["time"]["forward_ms"] / fastest["time"]["forward_ms"]
want("The strict setting (%s) costs %.2fx the fastest" % (strict["name"], ratio) in flat,
     "the strict setting's cost %.2fx" % ratio)
for s in ok:
    v = s["vs_float64"]
    first = v.get("first_divergent")
    if first:
        want("%s: the difference from float64 starts at %s (%s)" % (s["name"], first["layer"],
             first["op"]) in flat, "%s starts at %s" % (s["name"], first["layer"]))
        for amp in v.get("amplifiers", []):
            want("%s (%s) amplifies it" % (amp["layer"], amp["op"]) in flat,
                 "%s amplified by %s" % (s["name"], amp["layer"]))
    elif v.get("compared"):
        quiet = flat.split("Within rounding noise of float64 at every layer:")
        want(len(quiet) > 1 and s["name"] + " (output" in quiet[1].split(" - ")[0],
             "%s listed as within noise" % s["name"])
    for b in s["batch"]["sizes"]:
        n = len(b["differing_layers"])
        if n:
            want("%s at batch %d: %d of %d layers differ from the whole batch, the first %s" %
                 (s["name"], b["batch"], n, b["layers"], b["first_differing"]["layer"]) in flat,
                 "%s batch %d: %d layers" % (s["name"], b["batch"], n))
            # the algorithm changes that can have moved the result come first: those at
            # layers whose output differs, the first differing layer's own first of all
            moved = [c for c in b.get("algo_changes", []) if not c.get("identical")]
            same = len(b.get("algo_changes", [])) - len(moved)
            head = "%s at batch %d:" % (s["name"], b["batch"])
            part = flat.split(head)[1].split(" - ")[0] if head in flat else ""
            if moved:
                c = moved[0]
                want('With the batch size, %s changed algorithm from "%s" to "%s"' % (
                    c["layer"], c["reference"], c["this"]) in part,
                     "%s: the first change at a differing layer (%s) named first" % (
                         head, c["layer"]))
            if len(moved) > 4:
                want("and %d more layers whose output differs" % (len(moved) - 4) in part,
                     "%s %d more changes at differing layers" % (head, len(moved) - 4))
            if same:
                want("%d layer%s changed algorithm with %s output identical" % (
                    same, "" if same == 1 else "s", "its" if same == 1 else "their") in part,
                     "%s %d changes with identical outputs counted" % (head, same))
want("()" not in text, "an empty () in the report")
if doc["model"]["name"].startswith("lenet"):
    tf32 = [s for s in ok if s["knobs"].get("tf32")]
    want(tf32 and all(s["vs_float64"]["first_divergent"]["layer"] == "fc1" for s in tf32),
         "every TF32 setting starts at fc1 in the document")
    want(all(any(a["op"] == "Floor" for a in s["vs_float64"]["amplifiers"]) for s in tf32),
         "the Floor amplifies every TF32 setting in the document")
print("\n".join(bad) if bad else "ok")
sys.exit(1 if bad else 0)
PY
        fail "$doc: the report does not say what the document holds: $(cat "$TMP/$doc.check")"
    echo "$doc: $(cat "$TMP/$doc.check") ($(wc -l <"$TMP/$doc.txt") lines)"
done
echo "sweep_h200_report: ok"
