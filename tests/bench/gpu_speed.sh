#!/bin/sh
# tests/bench/gpu_speed.sh: the rows of issue 22 on the H200 machine (or any NVIDIA GPU where
# this checkout was built with CUDA and `make bench`), in one call: transformers and half
# precision against PyTorch eager on the same GPU, fingerprint capture against none, the
# seed case's capture against its bound; correctness first. Steps (STEPS picks them):
#   ops      every op on cuda against cpu64, then the float16 and bfloat16 cases
#            (tests/engine/backend_ops_cuda.sh)
#   bitwise  with BASE=DIR (a build of the commit before): the seed case, gpt2_tiny (float32,
#            float16, bfloat16) and bert_tiny (float32, float16) on cuda, every layer captured
#            by both builds and diffed: which layers are not bit for bit the same, the first
#   vit      gpu_cudnn.py bench for vit_b_16 at batch 8 and 32, TF32 off and on, autotune
#            (engine wall against PyTorch eager's, its per-op device time at batch 32, the seed
#            case's captured run against its bound)
#   bert     bert-base (gpt2_export.py: BERT base's shape, 128 tokens) at batch 8 and 32,
#            float32, TF32 off and on: bench_half's forward against gpu_half.py speed (CUDA
#            events both), the outputs compared with TF32 off
#   gpt2     gpt2-12 (GPT-2 small's shape) at batch 8 x 1024, float16 and bfloat16: bench_half
#            against gpu_half.py check (PyTorch's forward timed; both errors against the
#            float64 truth, gpudiff's within 2x PyTorch's)
#   g48      gpt2-48 (1.56e9 parameters), the same; its export (minutes) starts first, in the
#            background, when the step is asked for
#   fpwarm   bench_gpu's warm runs (forward_ms, capture_ms: every tensor, fingerprint_ms:
#            every fingerprint) for the seed case and ResNet-50 at batch 32, this build's and
#            (with BASE) the base build's
#   fp       whole-process `gpudiff-agent run --capture none|fingerprint` (3 rounds each,
#            alternating; with BASE the base build's too) for both and gpt2-12 float16 at
#            batch 8; bench_half --fingerprint-cost (warm) for gpt2-12; fp_verify on full
#            captures of the seed case and the tiny GPT-2 in float16 and bfloat16 (the kernels'
#            fingerprints against the host's, every field)
#   fpkernels bench_fp_cuda (the kernels against a device-to-device copy)
# Time: on the H200 the ops step took 74 s alone and 145 s beside the exports and the other
# checks; every step but g48 and fpkernels needs a call of about 400 s.
# Every step has its own time limit, logs to LOGS and goes on after a failure; the summary
# comes last; OUT gets logs.tgz.
# usage: OUT=DIR tests/bench/gpu_speed.sh BUILD_DIR SHARED_DIR [PYTHON_WITH_TORCH]
# env: STEPS ("ops bitwise vit bert gpt2 fpwarm fp"; add g48), BASE, REPEATS (10), WORK
#      (/tmp/gpu_speed), LOGS (/tmp/gpu_speed-logs)
set -u
build=$(cd "$1" && pwd)
shared=$(cd "$2" && pwd)
py=${3:-/opt/torch/.venv/bin/python3}
out=${OUT:-$PWD/gpu-logs}
work=${WORK:-/tmp/gpu_speed}
logs=${LOGS:-/tmp/gpu_speed-logs}
steps=" ${STEPS:-ops bitwise vit bert gpt2 fpwarm fp} "
base=${BASE:-}
reps=${REPEATS:-10}
top=$(cd "$(dirname "$0")/../.." && pwd)
A=$build/gpudiff-agent
B=$build/tests/bench
X="$py $top/tests/bench/gpt2_export.py"
H="$py $top/tests/bench/gpu_half.py"
T=$top/tests/fixtures/onnx/transformers
seed=$shared/cases/lenet-11-821
seed_args="--model $top/tests/fixtures/models/lenet-11-821.json --weights-dir $seed/initializer \
--input $seed/input.npz --input-key inp"
t_start=$(date +%s)
mkdir -p "$out" "$logs" "$work"
summary=$logs/summary.txt
: >"$summary"
export PYTHONUNBUFFERED=1 GD_TEST_FIXTURES="$top/tests/fixtures"
want() { case $steps in *" $1 "*) return 0 ;; esac; return 1; }
say() { echo "$*" >>"$summary"; }
# step NAME LIMIT CMD...: CMD in BUILD_DIR under a time limit, logged; its status goes to the
# summary (and the end of its log when it failed)
step() {
    name=$1; lim=$2; shift 2
    s=$(date +%s)
    (cd "$build" && timeout "$lim" "$@") >"$logs/$name.log" 2>&1
    rc=$?
    line="$name: exit $rc ($(( $(date +%s) - s )) s)"
    [ "$rc" = 124 ] && line="$line TIMED OUT after $lim s"
    say "$line"
    [ "$rc" = 0 ] || tail -n 4 "$logs/$name.log" | sed 's/^/    /' >>"$summary"
    return $rc
}
# fstep NAME FUNCTION: a function of this script as a step (its commands have their own
# time limits: timeout cannot run a function)
fstep() {
    name=$1; shift
    s=$(date +%s)
    (cd "$build" && "$@") >"$logs/$name.log" 2>&1
    rc=$?
    say "$name: exit $rc ($(( $(date +%s) - s )) s)"
    [ "$rc" = 0 ] || tail -n 4 "$logs/$name.log" | sed 's/^/    /' >>"$summary"
    return $rc
}
say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
say "build: $("$A" --version 2>&1 | head -1); base: ${base:-none}"

# ---- exports and model files, from the CPU, while the checks use the GPU ----
exp_pids=
if want gpt2 || want fp; then
    mkdir -p "$work/g12"
    step g12_export 200 $X export gpt2-12 "$work/g12/model.onnx" --batch 8 --seq 1024 &
    exp_pids="$exp_pids $!"
fi
if want bert; then
    mkdir -p "$work/bert"
    step bert_export 200 $X export bert-base "$work/bert/model.onnx" --batch 8 --seq 128 &
    exp_pids="$exp_pids $!"
fi
if want vit; then
    step vit_prepare 300 "$py" "$top/tests/bench/gpu_cudnn.py" prepare --work "$work/cudnn" \
        --models vit_b_16 --batches 8,32 &
    exp_pids="$exp_pids $!"
fi
if want fp || want fpwarm; then
    step resnet_export 200 "$py" "$top/tests/bench/gpu_diag_resnet.py" "$work/res" 32 &
    exp_pids="$exp_pids $!"
fi
if want g48; then
    mkdir -p "$work/g48"
    step g48_export 420 $X export gpt2-48 "$work/g48/model.onnx" --batch 8 --seq 1024 &
    g48_pid=$!
fi

# ---- correctness, the steps at once (none is timed) ----
ck_pids=
if want ops; then
    step ops 200 sh "$top/tests/engine/backend_ops_cuda.sh" &
    ck_pids="$ck_pids $!"
    step cuda_session 120 env CK_FORK=no ./tests/engine/check_cuda_session &
    ck_pids="$ck_pids $!"
fi
if want bitwise && [ -n "$base" ]; then
    # bitwise TAG ARGS...: every layer by the base build and by this one, then the diff
    bitwise() {
        tag=$1; shift
        timeout 60 "$base/gpudiff-agent" run "$@" --backend cuda --out "$work/bw_base_$tag" \
            --replace &&
            timeout 60 "$A" run "$@" --backend cuda --out "$work/bw_new_$tag" --replace &&
            timeout 60 "$A" diff "$work/bw_base_$tag" "$work/bw_new_$tag" --json \
                >"$work/bw_$tag.json" || return 1
        "$py" - "$work/bw_$tag.json" "$tag" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
layers = d["layers"]
bad = [l for l in layers if l["verdict"] != "identical"]
first = "%s (%s)" % (bad[0]["name"], bad[0]["op"]) if bad else "none"
print("bitwise %s: %d layers, %d not bit for bit the base build's; the first: %s; their ops: %s"
      % (sys.argv[2], len(layers), len(bad), first, sorted({l["op"] for l in bad})[:12]))
PY
    }
    all_bw() {
        bitwise seed $seed_args || exit 1
        for d in float32 float16 bfloat16; do
            dt="--dtype $d"
            [ $d = float32 ] && dt=
            bitwise "gpt2_tiny_$d" --model "$T/gpt2_tiny.onnx" \
                --input "input_ids=$T/gpt2_tiny.input_ids.npy" $dt || exit 1
        done
        for d in float32 float16; do
            dt="--dtype $d"
            [ $d = float32 ] && dt=
            bitwise "bert_tiny_$d" --model "$T/bert_tiny.onnx" \
                --input "input_ids=$T/bert_tiny.input_ids.npy" \
                --input "attention_mask=$T/bert_tiny.attention_mask.npy" $dt || exit 1
        done
    }
    fstep bitwise all_bw
    grep '^bitwise' "$logs/bitwise.log" | sed 's/^/  /' >>"$summary"
    rm -rf "$work"/bw_*
fi
wait $ck_pids
if want ops; then
    grep -E '^[0-9]+%: Checks|FAIL' "$logs/ops.log" | head -n 12 | sed 's/^/  ops: /' >>"$summary"
    grep -E '^[0-9]+%: Checks|FAIL' "$logs/cuda_session.log" | head -n 6 |
        sed 's/^/  cuda_session: /' >>"$summary"
fi
wait $exp_pids

# ---- speed against PyTorch ----
if want vit && [ -f "$work/cudnn/vit_b_16/model-b32.onnx" ]; then
    step vit 300 "$py" "$top/tests/bench/gpu_cudnn.py" bench --build "$build" --work "$work/cudnn" \
        --seed "$seed" --models vit_b_16 --batches 8,32 --modes autotune --no-legacy \
        --repeats "$reps"
    sed -n '/^engine \/ PyTorch/,/^targets met/p; /^vit_b_16 batch/,/^  PyTorch/p; /^captured run/,/^$/p' \
        "$logs/vit.log" | grep -v '^$' | sed 's/^/  /' >>"$summary"
fi
if want bert && [ -f "$work/bert/model.onnx" ]; then
    for b in 8 32; do
        for t in off on; do
            p=$work/bert/b$b
            step "bert_torch_b${b}_$t" 120 $H speed bert-base --batch $b --seq 128 --tf32 $t \
                --repeats "$reps" --save "$p"
            grep torch_ms "$logs/bert_torch_b${b}_$t.log" | sed 's/^/  /' >>"$summary"
            step "bert_engine_b${b}_$t" 120 "$B/bench_half" "$work/bert/model.onnx" --tf32 $t \
                --repeats "$reps" --out "$p.engine_$t.npy" "input_ids=$p.input_ids.npy" \
                "attention_mask=$p.attention_mask.npy"
            grep -E 'forward_ms_median' "$logs/bert_engine_b${b}_$t.log" |
                sed "s/^/  bert-base batch $b tf32 $t engine /" >>"$summary"
        done
        step "bert_out_b$b" 60 $H compare "$p.engine_off.npy" "$p.torch_out.npy" --bound 1e-3
        grep compare "$logs/bert_out_b$b.log" | sed 's/^/  /' >>"$summary"
    done
fi
# gpt2_rows NAME DIR CONFIG LIMIT: bench_half in both formats, then PyTorch's check
gpt2_rows() {
    for d in float16 bfloat16; do
        step "$1_forward_$d" "$4" "$B/bench_half" "$2/model.onnx" --dtype $d --repeats 5 \
            --out "$2/gd_$d.npy" "input_ids=$2/model.input_ids.npy"
        grep -E 'forward_ms_median|device_peak_bytes' "$logs/$1_forward_$d.log" |
            sed "s/^/  $1 $d: /" >>"$summary"
    done
    step "$1_check" $(($4 * 3)) $H check "$3" "$2/model.input_ids.npy" "$2/gd_float16.npy" \
        "$2/gd_bfloat16.npy" --json "$logs/$1_check.json"
    grep -E 'gpudiff .* torch' "$logs/$1_check.log" | sed 's/^/  /' >>"$summary"
    rm -f "$2/gd_float16.npy" "$2/gd_bfloat16.npy"
}
if want gpt2 && [ -f "$work/g12/model.onnx" ]; then
    gpt2_rows g12 "$work/g12" gpt2-12 40
fi

# ---- fingerprints ----
res="--model $work/res/resnet50/model.json --input $work/res/resnet50/input.npy"
if want fpwarm; then
    # warm: bench_gpu (forward, full capture, fingerprints), this build and the base's
    for who in new base; do
        bg=$B/bench_gpu
        if [ "$who" = base ]; then
            [ -n "$base" ] && [ -x "$base/tests/bench/bench_gpu" ] || continue
            bg=$base/tests/bench/bench_gpu
        fi
        step "fp_warm_seed_$who" 60 "$bg" "$top/tests/fixtures/models/lenet-11-821.json" \
            "$seed/input.npz" inp "$reps"
        step "fp_warm_res_$who" 120 "$bg" "$work/res/resnet50/model.json" \
            "$work/res/resnet50/input.npy" - 5
        for c in seed res; do
            grep -E '^(forward_ms|capture_ms|fingerprint_ms|captured_bytes|first_layer_ms|input_upload_ms|pinned_d2h_gbps) ' \
                "$logs/fp_warm_${c}_$who.log" | tr '\n' ' ' | sed "s/^/  warm $c $who: /" >>"$summary"
            echo >>"$summary"
        done
    done
fi
if want fp; then
    # whole process: the agent, none and fingerprint alternating
    whole() { # TAG AGENT ROUNDS ARGS...
        tag=$1; agent=$2; n=$3; shift 3
        i=0
        while [ "$i" -lt "$n" ]; do
            for m in none fingerprint; do
                s=$(date +%s.%N)
                timeout 120 "$agent" run "$@" --backend cuda --capture $m \
                    --out "$work/whole_${tag}_$m" --replace >/dev/null 2>>"$logs/whole.err" ||
                    echo "whole $tag $m: failed"
                echo "whole $tag $m $(awk "BEGIN{print $(date +%s.%N) - $s}")"
            done
            i=$((i + 1))
        done
        rm -rf "$work"/whole_*
    }
    all_whole() {
        whole seed "$A" 3 $seed_args
        [ -n "$base" ] && whole seed_base "$base/gpudiff-agent" 3 $seed_args
        whole res "$A" 2 $res
        [ -n "$base" ] && whole res_base "$base/gpudiff-agent" 2 $res
        [ -f "$work/g12/model.onnx" ] && whole g12 "$A" 2 --model "$work/g12/model.onnx" \
            --input "input_ids=$work/g12/model.input_ids.npy" --dtype float16
        return 0
    }
    fstep fp_whole all_whole
    "$py" - "$logs/fp_whole.log" <<'PY' >>"$summary"
import statistics, sys
t = {}
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 4 and f[0] == "whole":
        t.setdefault((f[1], f[2]), []).append(float(f[3]))
for tag in sorted({k[0] for k in t}):
    n, f = t.get((tag, "none")), t.get((tag, "fingerprint"))
    if n and f:
        mn, mf = statistics.median(n), statistics.median(f)
        print("  whole process %s: none %.3f s, fingerprint %.3f s (median of %d): %.3fx" % (
            tag, mn, mf, len(n), mf / mn))
PY
    if [ -f "$work/g12/model.onnx" ]; then
        step g12_fpcost 120 "$B/bench_half" "$work/g12/model.onnx" --dtype float16 --repeats 5 \
            --fingerprint-cost "input_ids=$work/g12/model.input_ids.npy"
        grep -E '^(forward_ms_median|run_)' "$logs/g12_fpcost.log" | tr '\n' ' ' |
            sed 's/^/  g12 float16 warm: /' >>"$summary"
        echo >>"$summary"
    fi
    # the kernels' fingerprints against the host's: the seed case (float32), the tiny GPT-2 in
    # float16 and bfloat16
    verify() {
        timeout 60 "$A" run $seed_args --backend cuda --capture full --out "$work/v_seed" \
            --replace && timeout 60 "$B/fp_verify" "$work/v_seed" | tail -n 1 || return 1
        for d in float16 bfloat16; do
            timeout 60 "$A" run --model "$T/gpt2_tiny.onnx" \
                --input "input_ids=$T/gpt2_tiny.input_ids.npy" --dtype $d --backend cuda \
                --capture full --out "$work/v_$d" --replace &&
                timeout 60 "$B/fp_verify" "$work/v_$d" | tail -n 1 || return 1
        done
    }
    fstep fp_verify verify
    sed 's/^/  fp_verify: /' "$logs/fp_verify.log" | tail -n 3 >>"$summary"
    rm -rf "$work"/v_*
    if want fpkernels; then
        step bench_fp_cuda 120 "$B/bench_fp_cuda"
        grep -E '^(device|[0-9])' "$logs/bench_fp_cuda.log" | sed 's/^/  /' >>"$summary"
    fi
fi
if want g48; then
    wait "$g48_pid"
    [ -f "$work/g48/model.onnx" ] && gpt2_rows g48 "$work/g48" gpt2-48 120
fi

(cd "$logs" && tar czf "$out/logs.tgz" --exclude='*.npy' .)
echo "==== summary ($(( $(date +%s) - t_start )) s) ===="
cat "$summary"
