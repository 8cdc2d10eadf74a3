#!/usr/bin/python3
"""bench_metrics.py: runs bench_metrics (gd_metrics_compute and memcpy, timed in C), then
times numpy's max|a-b|, mean|a-b| and isclose count on the same arrays, and prints one
table. Run from the build directory, or name the program with --bench.

    /usr/bin/python3 tests/bench/bench_metrics.py [--dense] [--elements N]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

REPS = 5


def find_bench(given):
    if given:
        return given
    here = os.path.dirname(os.path.abspath(__file__))
    for path in ("tests/bench/bench_metrics", os.path.join(here, "bench_metrics")):
        if os.access(path, os.X_OK):
            return path
    sys.exit("bench_metrics.py: build tests/bench/bench_metrics first (make), or give --bench")


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"


def numpy_pass(a, b):
    return np.max(np.abs(a - b)), np.mean(np.abs(a - b)), np.isclose(a, b).sum()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", help="path of the bench_metrics program")
    ap.add_argument("--elements", type=int, help="float32 elements per array (64Mi)")
    ap.add_argument("--dense", action="store_true", help="perturb every element")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        cmd = [find_bench(args.bench), "--npy-dir", tmp]
        if args.elements:
            cmd += ["--elements", str(args.elements)]
        if args.dense:
            cmd.append("--dense")
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        c = dict(line.split(None, 1) for line in out.splitlines())
        a = np.load(os.path.join(tmp, "bench_a.npy"))
        b = np.load(os.path.join(tmp, "bench_b.npy"))

    numpy_pass(a, b)  # warm-up
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        abs_max, abs_mean, n_close = numpy_pass(a, b)
        times.append(time.perf_counter() - t0)
    numpy_s = statistics.median(times)

    n = a.size
    bytes_read = 2 * a.nbytes
    memcpy_s, metrics_s = float(c["memcpy_s"]), float(c["metrics_s"])
    memcpy_gbps = 2 * a.nbytes / memcpy_s / 1e9  # one array read and one written
    metrics_gbps = bytes_read / metrics_s / 1e9
    numpy_gbps = bytes_read / numpy_s / 1e9

    print(f"{n} float32 pairs (2 x {a.nbytes >> 20} MiB), {c['data']} data; "
          f"{cpu_model()}, {os.cpu_count()} cores; medians of {REPS} after a warm-up")
    print(f"{'':34}{'seconds':>10}{'GB/s':>9}")
    print(f"{'memcpy (read + written)':34}{memcpy_s:10.4f}{memcpy_gbps:9.2f}")
    print(f"{'gd_metrics_compute (read)':34}{metrics_s:10.4f}{metrics_gbps:9.2f}")
    print(f"{'numpy max, mean, isclose (read)':34}{numpy_s:10.4f}{numpy_gbps:9.2f}")
    print(f"metric pass / memcpy bandwidth: {metrics_gbps / memcpy_gbps:.2f}; "
          f"numpy time / metric pass time: {numpy_s / metrics_s:.1f}x")

    # The same answers: numpy.isclose semantics for the count, float32 a-b for the max.
    n_mismatch = n - int(n_close)
    ok = n_mismatch == int(c["n_mismatch"]) and float(abs_max) == float(c["abs_max"])
    # numpy's float32 mean is a float32 pairwise sum: it differs in the 6th or 7th digit.
    print(f"check: mismatches {c['n_mismatch']} (numpy {n_mismatch}), "
          f"max|a-b| {float(c['abs_max']):.9g} (numpy {float(abs_max):.9g}): "
          f"{'agree' if ok else 'DISAGREE'}; mean|a-b| {float(c['abs_mean']):.9g} "
          f"(numpy, float32: {float(abs_mean):.9g})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
