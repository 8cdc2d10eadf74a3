#!/bin/sh
# tests/bench/gpu_bitwise.sh: cuda --repro bitwise on the GPU machine, in one go, printing one
# table at the end (docs/PERFORMANCE.md and docs/NUMERICS.md hold its figures):
#   ops       every case of every op fixture, cuda --repro bitwise against cpu bit for bit,
#             again with GPUDIFF_REPRO_GRID=3 and with naive products (tests/engine/check_repro)
#   seed      the seed case (lenet-11-821) at batch 1, 7, 32 and its 1000 images
#   resnet50, vit, gpt2_f32, gpt2_f16   ResNet-50 (JSON export, random weights), vit_b_16 and
#             GPT-2 small's shape (ONNX exports, 32 x 64 tokens) at batch 1, 7 and 32, every
#             layer against cpu on the same rows: bitwise mode whole, with the grid limited
#             (GPUDIFF_REPRO_GRID=40, at batch 7), sliced by --batch where the model allows,
#             and the default mode for contrast; each layer's rows at 1 and 7 against the
#             same rows at 32 (tests/bench/bench_bitwise); the forward's time in both modes at
#             batch 32
#   gpt2_time GPT-2 small in float16 at 8 x 1024 tokens: both modes' forward time
#   torch     PyTorch eager on the same GPU (gpu_bitwise.py torch)
#   sass      the sm_75 build's repro objects (SM75_DIR): cuobjdump's instruction set
# Each step has its own time limit within BUDGET seconds (default 230), logs to LOGS (default
# $OUT/logs), and goes on after a failure; the models are made by gpu_bitwise.py prepare in
# the background while the op cases run.
# usage: OUT=DIR sh tests/bench/gpu_bitwise.sh BUILD_DIR SEED_DIR [PYTHON]
set -u
t_start=$(date +%s)
build=$(cd "$1" && pwd)
seed=$(cd "$2" && pwd)
py=${3:-/opt/torch/.venv/bin/python3}
out=${OUT:-$PWD/gpu-logs}
logs=${LOGS:-$out/logs}
work=${WORK:-/tmp/gpu_bitwise}
budget=${BUDGET:-230}
deadline=$((t_start + budget))
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out" "$logs" "$work"
summary=$logs/steps.txt
: >"$summary"
export PYTHONUNBUFFERED=1
B=$build/tests/bench/bench_bitwise

# step NAME SECONDS COMMAND...: COMMAND under a time limit (at most what is left of the
# budget), its output in LOGS/NAME.log, its exit status in the summary
step() {
    name=$1; limit=$2; shift 2
    start=$(date +%s)
    left=$((deadline - start))
    if [ "$left" -lt 5 ]; then
        echo "$name: SKIPPED (budget spent)" >>"$summary"
        return 1
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    timeout "$limit" "$@" >"$logs/$name.log" 2>&1
    rc=$?
    line="$name: exit $rc ($(( $(date +%s) - start )) s)"
    [ "$rc" = 124 ] && line="$line TIMED OUT after $limit s"
    echo "$line" | tee -a "$summary"
    return $rc
}

nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader >"$logs/gpu.txt" 2>&1
"$py" "$here/gpu_bitwise.py" prepare --work "$work" >"$logs/prepare.log" 2>&1 &
prep=$!

GD_TEST_FIXTURES=${FIXTURES:-$here/../fixtures} CK_FORK=no \
    step ops 110 "$build/tests/engine/check_repro"
step seed 25 "$B" "$here/../fixtures/models/lenet-11-821.json" --name seed \
    --weights-dir "$seed/initializer" --batches 1,7,32,1000 --grid 3 --slices 7 --time 10 \
    "input=$seed/input.npz:inp"
left=$((deadline - $(date +%s) - 5))
( sleep "$left"; kill "$prep" 2>/dev/null ) &
wait "$prep"
echo "prepare: exit $? ($(( $(date +%s) - t_start )) s since start)" >>"$summary"
G="--grid 40 --grid-batch 7" # 40 blocks a launch at most (a T4 has 40 SMs), at batch 7
# shellcheck disable=SC2086
step resnet50 60 "$B" "$work/resnet50/model.json" --name resnet50 --batches 1,7,32 $G \
    --slices 7 --time 10 "input=$work/resnet50/input.npy"
# shellcheck disable=SC2086
if step vit 60 "$B" "$work/vit/model.onnx" --name vit_b_16 --batches 1,7,32 $G --time 10 \
    "input=$work/vit/input.npy"; then :; else
    # the free batch axis refused: one export per batch size
    step vit_export 40 "$py" "$here/gpu_bitwise.py" fixed-vit --work "$work" --batches 1,7,32
    for b in 32 7 1; do
        # shellcheck disable=SC2046
        step "vit_b$b" 30 "$B" "$work/vit_b$b/model.onnx" --name vit_b_16 \
            $( [ "$b" = 7 ] && echo --grid 40 ) $( [ "$b" = 32 ] && echo --time 10 ) \
            "input=$work/vit_b$b/input.npy"
    done
fi
step gpt2_time 60 "$B" "$work/gpt2_time/model.onnx" --name gpt2 --dtype float16 --no-compare \
    --time 5 "input_ids=$work/gpt2_time/input_ids.npy"
step torch 60 "$py" "$here/gpu_bitwise.py" torch --work "$work"
# shellcheck disable=SC2086
step gpt2_f32 60 "$B" "$work/gpt2_cmp/model.onnx" --name gpt2 --batches 1,7,32 $G \
    "input_ids=$work/gpt2_cmp/input_ids.npy"
# shellcheck disable=SC2086
step gpt2_f16 60 "$B" "$work/gpt2_cmp/model.onnx" --name gpt2 --dtype float16 --batches 1,7,32 \
    $G "input_ids=$work/gpt2_cmp/input_ids.npy"
if [ -n "${SM75_DIR:-}" ]; then
    for o in "$SM75_DIR"/*.o; do
        cuobjdump --dump-sass "$o" 2>&1
    done >"$logs/sass75.txt"
    echo "sass: $(grep -c 'Function :' "$logs/sass75.txt") sm_75 kernels" >>"$summary"
fi

# ---- the table ----
"$py" - "$logs" <<'PYEOF' | tee "$out/table.txt"
import glob, os, re, sys
logs = sys.argv[1]
def kv(line):
    return dict(re.findall(r'(\w+)=("[^"]*"|\S+)', line))
runs, rows, times, torch, fails = [], [], [], {}, []
for f in sorted(glob.glob(os.path.join(logs, "*.log"))):
    for line in open(f, errors="replace"):
        if line.startswith("RUN "): runs.append(kv(line))
        elif line.startswith("ROWS "): rows.append(kv(line))
        elif line.startswith("TIME "): times.append(kv(line))
        elif line.startswith("TORCH "):
            d = kv(line); torch[d["name"]] = float(d["ms"])
        elif line.startswith("FAIL "): fails.append(line.strip())
print("## cuda --repro bitwise against cpu, bit for bit")
print(open(os.path.join(logs, "gpu.txt")).read().strip())
ops = os.path.join(logs, "ops.log")
if os.path.exists(ops):
    text = open(ops, errors="replace").read()
    s = re.findall(r"REPRO-SUMMARY .*", text)
    bad = sorted(set(re.findall(r"REPRO-DIFF (\S+)", text)))
    print("op cases (bitwise, grid=3, naive products): %s"
          % (s[-1] if s else "no summary (see ops.log)"))
    for b in bad[:40]:
        print("  differs: %s" % b)
print()
print("| model | dtype | batch | layers | bitwise | grid-limited | --batch slices | default mode "
      "| first differing layer (bitwise) |")
print("|---|---|---|---|---|---|---|---|---|")
seen = {}
for r in runs:
    key = (r["name"], r["dtype"], int(r["batch"]))
    seen.setdefault(key, {})[r["mode"]] = r
for key in sorted(seen, key=lambda k: (k[0], k[1], k[2])):
    m = seen[key]
    def cell(mode):
        r = m.get(mode)
        if r is None: return "-"
        same = r["identical"] == r["layers"] and r["bad_elements"] == "0"
        return "%s/%s %s" % (r["identical"], r["layers"], "equal" if same else "DIFFER")
    first = m.get("bitwise", {}).get("first", "-")
    layers = m.get("bitwise", m.get("default", {})).get("layers", "-")
    print("| %s | %s | %d | %s | %s | %s | %s | %s | %s |" % (key[0], key[1], key[2], layers,
          cell("bitwise"), cell("bitwise-grid"), cell("bitwise-slices"), cell("default"), first))
print()
print("| model | dtype | rows of batch | against batch | mode | batch layers | row-identical "
      "| first differing |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (r["name"], r["dtype"], r["batch"], r["vs"],
          r["mode"], r["batch_layers"], r["row_identical"], r["first"]))
print()
print("| model | dtype | batch | default cuda ms | bitwise ms | bitwise / default "
      "| PyTorch eager ms | bitwise / PyTorch |")
print("|---|---|---|---|---|---|---|---|")
tkey = {"resnet50": "resnet50", "vit_b_16": "vit_b_16", "gpt2": "gpt2", "seed": None}
for t in times:
    pt = torch.get(tkey.get(t["name"]) or "", None)
    if t["name"] == "gpt2" and t["dtype"] != "float16": pt = None
    b = float(t["bitwise_ms"])
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (t["name"], t["dtype"], t["batch"],
          t["default_ms"], t["bitwise_ms"], t["ratio"], "%.3f" % pt if pt else "-",
          "%.2f" % (b / pt) if pt else "-"))
for f in fails:
    print("FAILED RUN: " + f)
print()
print(open(os.path.join(logs, "steps.txt")).read().strip())
PYEOF
