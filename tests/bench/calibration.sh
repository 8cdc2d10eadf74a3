#!/bin/sh
# calibration.sh BUILD [CASES] [SEED]: the verdict's whole calibration corpus
# (tests/engine/calibration.py; 1,000 graphs and an injection into each of the first 200 of
# float32 by default) with the two tables docs/COMPARISON.md quotes: false alarms by weights
# and dtype, detection by injected format. A benchmark of the verdict, not a timed test;
# about 10 minutes on 2 cores.
set -eu
build=${1:?usage: tests/bench/calibration.sh BUILD [CASES] [SEED]}
cases=${2:-1000}
seed=${3:-1}
top=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpudiff-calib.XXXXXX")
trap 'rm -rf "$work"' EXIT
python=$(sed -n "s/^PYTHON_NUMPY='\(.*\)'$/\1/p" "$build/tests/integration/env.sh")
"${python:-python3}" "$top/tests/engine/calibration.py" "$build/gpudiff-agent" "$work" \
    --cases "$cases" --inject 200 --seed "$seed" --tables
