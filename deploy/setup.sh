#!/bin/sh
# deploy/setup.sh: sets gpudiff up on Debian 12 (run as root): installs the Debian packages
# it needs, builds it in build/, then does one job:
#
#   deploy/setup.sh demo    the main job (deploy/demo.sh): start gpudiffd with its dashboard,
#                           run the seed case (shared/cases/lenet-11-821) through agents on
#                           the CPU backends (and the GPU when there is one), upload every
#                           run, and print the comparison that explains the seed's report
#   deploy/setup.sh test    run the whole test suite (make check), then the same suite
#                           built with AddressSanitizer and UndefinedBehaviorSanitizer
#                           (the daemon's integration tests included), then every
#                           libFuzzer target for a fixed number of runs (tests/fuzz/run.sh)
#   deploy/setup.sh build   only install and build
#
# Environment: CONFIGURE_FLAGS adds configure options (e.g. --with-cuda=no);
# GPUDIFF_SKIP_APT=1 skips the package step; JOBS sets make's parallelism; FUZZ_RUNS the
# executions of each fuzz target in the test job (FUZZ_RUNS_<name> one target's), FUZZ_SEED
# their seed (default 1; 0 draws a new one); TEST_CUDA_ARCHS the GPU architectures the test
# job compiles CUDA for (default "75 90": the oldest the engine supports and the H200's; demo
# and build compile every one nvcc has, 12 with CUDA 13, which takes 18 minutes on 2 cores).
set -eu

job=${1:-build}
case "$job" in
demo|test|build) ;;
-h|--help)
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 0 ;;
*)
    echo "usage: deploy/setup.sh demo|test|build" >&2
    exit 2 ;;
esac

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
jobs=${JOBS:-$(nproc)}

packages="build-essential autoconf automake libtool pkg-config
  libjansson-dev zlib1g-dev libssl-dev libsqlite3-dev libcurl4-openssl-dev
  libmicrohttpd-dev libzstd-dev check python3 python3-numpy ca-certificates
  sqlite3 curl jq
  protobuf-c-compiler libprotobuf-c-dev libonnx-dev libonnx-testdata python3-onnx
  clang libclang-rt-14-dev iproute2"
# gpudiff-agent sweep's test checks its document against schema/json/sweep.schema.json
packages="$packages python3-jsonschema"
# fleet (issue 15): gpudiffd on PostgreSQL (libpq), its tests' own PostgreSQL server and
# the balancer in front of several daemons (and TLS), the scrape test, systemd-analyze
packages="$packages libpq-dev postgresql-15 postgresql-client-15 haproxy openssl prometheus systemd"
# jobagt: fleet_netns.sh's namespaces and bridge (iproute2, above), its ps --ppid (procps)
packages="$packages procps"
# tls: gpudiffd checks its certificate with GnuTLS (libmicrohttpd's TLS library)
packages="$packages libgnutls28-dev"

install_packages() {
    missing=""
    for p in $packages; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing="$missing $p"
    done
    # The dashboard's browser test (tests/web): Debian's Chromium, Node.js (18 or newer;
    # Debian 12 has 18) and npm. Each is asked for only when its command is missing: a
    # Node.js from elsewhere is kept, and its nodejs package, which often ships npm and
    # conflicts with Debian's npm, would make asking for npm fail.
    [ -x /usr/bin/chromium ] || missing="$missing chromium"
    command -v node >/dev/null || missing="$missing nodejs"
    command -v npm >/dev/null || missing="$missing npm"
    [ -z "$missing" ] && return 0
    echo "setup: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing
}

# build DIR [configure options...]: configures (again when the options differ from the
# last ones, kept in DIR/.setup-configure: a test build's fewer GPU architectures are never
# what demo runs on) and builds out of tree.
build() {
    dir=$1; shift
    [ -x configure ] || autoreconf -fi
    mkdir -p "$dir"
    opts="--enable-werror ${CONFIGURE_FLAGS:-} $*"
    if [ ! -f "$dir/Makefile" ] || [ "$(cat "$dir/.setup-configure" 2>/dev/null)" != "$opts" ]; then
        rm -f "$dir/.setup-configure"
        # shellcheck disable=SC2086
        (cd "$dir" && ../configure --enable-werror ${CONFIGURE_FLAGS:-} "$@")
        echo "$opts" >"$dir/.setup-configure"
    fi
    make -C "$dir" -j"$jobs"
}

[ "${GPUDIFF_SKIP_APT:-0}" = 1 ] || install_packages
if [ "$job" = test ]; then
    build build "--with-cuda-archs=${TEST_CUDA_ARCHS:-75 90}"
else
    build build
fi

case "$job" in
demo)
    ./deploy/demo.sh build "$top/../shared"
    ;;
test)
    make -C build -j"$jobs" check
    # The sanitized build leaves CUDA out: its kernels cannot run without a GPU, and the
    # normal build above already compiled them.
    build build-sanitize --enable-asan --enable-ubsan --with-cuda=no
    ASAN_OPTIONS=detect_leaks=1 make -C build-sanitize -j"$jobs" check
    # Every libFuzzer target (tests/fuzz/fuzz_*.c) for a fixed number of executions from
    # its checked-in corpus, built with clang in build-fuzz (about 3 minutes in all, the
    # build included).
    # A fixed seed (FUZZ_SEED, default 1) narrows the draw between runs; the
    # long random campaigns are run by hand (docs/PERFORMANCE.md, "Fuzzing").
    # fuzz_onnx runs 600,000 (FUZZ_RUNS_onnx): its inputs now reach shape inference and the
    # folds, and 1.5e6 of them took 429 s of a clean run here, more than all the others.
    FUZZ_RUNS_onnx=${FUZZ_RUNS_onnx:-600000} JOBS=$jobs FUZZ_SEED=${FUZZ_SEED:-1} \
        tests/fuzz/run.sh . build-fuzz "${FUZZ_RUNS:-1500000}"
    ;;
esac
