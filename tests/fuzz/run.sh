#!/bin/sh
# tests/fuzz/run.sh SRCDIR WORKDIR [RUNS]: builds every libFuzzer target tests/fuzz/fuzz_*.c
# and runs each for RUNS executions (default 20000; FUZZ_RUNS_<name>, e.g. FUZZ_RUNS_http,
# sets one target's count), starting from its checked-in corpus tests/fuzz/corpus/<name>/
# (fuzz_http.c: corpus/http/) with tests/fuzz/<name>.dict when there is one.
#
# The build is a configure of SRCDIR in WORKDIR/build with clang, AddressSanitizer,
# UndefinedBehaviorSanitizer and -fsanitize=fuzzer-no-link (made once, then reused);
# WORKDIR/corpus/<name>/ collects the new inputs a run finds. A crash, a leak, a sanitizer
# finding or a broken promise (the targets abort on those) fails the script, and the input
# that did it is left in WORKDIR as crash-*, leak-* or timeout-*: add it to the corpus with
# the fix. Prints one line per target (executions, seconds, corpus size) and a total.
#
# FUZZ_SEED sets libFuzzer's random seed (-seed): a fixed number (the test job's default is
# 1) narrows how much one run differs from the next (not to nothing: seed files of equal
# size are read in directory order, threads and clocks vary), so a CI run explores about
# what a local run of the same sources explored; 0 draws a new seed each run (libFuzzer's
# default, for the long campaigns that look for new bugs). The seed used is printed.
# Needs clang and libFuzzer (Debian: clang, libclang-rt-14-dev; deploy/setup.sh installs
# them); without them it says so and exits 77.
set -eu
if [ $# -lt 2 ] || [ "$1" = -h ] || [ "$1" = --help ]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    [ $# -ge 2 ] || [ "${1:-}" = -h ] || [ "${1:-}" = --help ]
    exit $?
fi
src=$(cd "$1" && pwd)
work=$(mkdir -p "$2" && cd "$2" && pwd)
runs=${3:-20000}
seed=${FUZZ_SEED:-0}
case "$seed" in
''|*[!0-9]*) echo "fuzz: FUZZ_SEED must be a non-negative integer, not '$seed'" >&2; exit 2 ;;
esac
jobs=${JOBS:-2}
command -v clang >/dev/null 2>&1 || { echo "fuzz: clang is not installed"; exit 77; }
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n)\n{ return 0; }\n' \
    > "$work/probe.c"
clang -fsanitize=fuzzer "$work/probe.c" -o "$work/probe" 2>/dev/null ||
    { echo "fuzz: clang cannot link libFuzzer (install libclang-rt-14-dev)"; exit 77; }

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
san="$san -fno-sanitize=float-divide-by-zero"
mkdir -p "$work/build"
if [ ! -f "$work/build/Makefile" ]; then
    echo "fuzz: configuring a clang build in $work/build"
    [ -x "$src/configure" ] || (cd "$src" && autoreconf -fi)
    (cd "$work/build" && "$src/configure" CC=clang --with-cuda=no \
        CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer-no-link $san" \
        LDFLAGS="$san" >configure.log 2>&1) ||
        { tail -n 20 "$work/build/configure.log"; exit 1; }
fi
# engine/local.mk vectorizes the CPU kernels with a flag of GCC's alone.
make -C "$work/build" -j"$jobs" CPU_VECTOR_CFLAGS=-ftree-vectorize fuzz-targets \
    >"$work/build/fuzz-make.log" 2>&1 ||
    { tail -n 30 "$work/build/fuzz-make.log"; exit 1; }

total=0
failed=0
echo "fuzz: seed $seed for every target (FUZZ_SEED; 0: libFuzzer draws one for each)"
for f in "$src"/tests/fuzz/fuzz_*.c; do
    target=$(basename "$f" .c)
    name=${target#fuzz_}
    n=$(eval "echo \${FUZZ_RUNS_$name:-$runs}")
    mkdir -p "$work/corpus/$name"
    set -- -runs="$n" -seed="$seed" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1
    [ -f "$src/tests/fuzz/$name.dict" ] && set -- "$@" -dict="$src/tests/fuzz/$name.dict"
    seeds=""
    [ -d "$src/tests/fuzz/corpus/$name" ] && seeds="$src/tests/fuzz/corpus/$name"
    log="$work/$target.log"
    start=$(date +%s)
    # ASan's leak check runs at exit: a leak fails the run like a crash.
    if (cd "$work" && ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}" \
        "$work/build/tests/fuzz/$target" "$@" "$work/corpus/$name" $seeds >"$log" 2>&1); then
        done_runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        size=$(ls "$work/corpus/$name" | wc -l)
        echo "fuzz: $target: ${done_runs:-?} executions in $(($(date +%s) - start)) s," \
            "0 crashes, corpus $size new inputs"
        total=$((total + ${done_runs:-0}))
    else
        echo "fuzz: $target FAILED (log: $log; seed: $(sed -n 's/.*Seed: \([0-9]*\).*/\1/p' \
            "$log" | head -n 1)); the input that failed:" \
            "$(ls "$work" | grep -E '^(crash|leak|timeout|oom)-' | tr '\n' ' ')"
        grep -E "ERROR|SUMMARY|runtime error" "$log" | head -n 5
        failed=$((failed + 1))
    fi
done
echo "fuzz: $total executions in all, $failed targets failed"
[ "$failed" = 0 ]
