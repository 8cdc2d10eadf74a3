#!/usr/bin/env python3
"""Runs bench_forward (the engine's CPU forward, with and without capture) and, in the same
run, a numpy float32 forward of the same two graph shapes as the peer, then prints one table.

usage: bench_forward.py BUILD_DIR SEED_DIR [REPEATS] [THREADS]
The numpy peer uses numpy's BLAS (multi-threaded where the BLAS is) and im2col; the engine's
`cpu` backend keeps a fixed summation order per element and runs on THREADS threads (default:
one per core, like the BLAS), so the ratio is the price of a reproducible reference.
"""
import os
import subprocess
import sys
import time

import numpy as np
from numpy.lib.stride_tricks import as_strided


def median_ms(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def im2col_conv(x, w, stride, pad):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh = (x.shape[2] - kh) // stride + 1
    ow = (x.shape[3] - kw) // stride + 1
    s = x.strides
    cols = as_strided(x, (n, c, kh, kw, oh, ow),
                      (s[0], s[1], s[2], s[3], s[2] * stride, s[3] * stride))
    cols = cols.transpose(0, 4, 5, 1, 2, 3).reshape(n * oh * ow, c * kh * kw)
    out = cols @ w.reshape(m, -1).T
    return out.reshape(n, oh, ow, m).transpose(0, 3, 1, 2)


def lenet_numpy(seed):
    rng = np.random.default_rng(0)
    x = np.load(os.path.join(seed, "input.npz"))["inp"]
    w1 = rng.standard_normal((6, 1, 5, 5), dtype=np.float32)
    w2 = rng.standard_normal((16, 6, 5, 5), dtype=np.float32)
    f1 = rng.standard_normal((120, 16), dtype=np.float32)
    f2 = rng.standard_normal((84, 120), dtype=np.float32)
    f3 = rng.standard_normal((10, 84), dtype=np.float32)

    def forward():
        y = im2col_conv(x, w1, 1, 4)  # a transposed 5x5 conv at stride 1 is a padded conv
        y = np.maximum(y, 0)
        n, c, h, w = y.shape
        y = y.reshape(n, c, h // 2, 2, w // 2, 2).max(axis=(3, 5))
        y = im2col_conv(np.ascontiguousarray(y), w2, 1, 0)[:, :, ::7, ::5]
        y = np.where(y > 0, y, 0.1 * np.expm1(np.minimum(y, 0)))
        y = y[:, :, :2, :2].max(axis=(2, 3)).reshape(len(x), -1)
        y = np.maximum(y @ f1.T, 0)
        y = np.floor(y @ f2.T)
        return y @ f3.T
    return forward


def resnet18_numpy():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 3, 224, 224), dtype=np.float32)
    convs = []

    def conv_bn(cin, cout, k, stride):
        w = rng.standard_normal((cout, cin, k, k), dtype=np.float32) / (cin * k * k)
        a = rng.standard_normal(cout).astype(np.float32)
        b = rng.standard_normal(cout).astype(np.float32)
        return lambda t: im2col_conv(t, w, stride, k // 2) * a[None, :, None, None] + b[None, :, None, None]

    stem = conv_bn(3, 64, 7, 2)
    blocks = []
    cin = 64
    for stage, width in enumerate((64, 128, 256, 512)):
        for blk in range(2):
            stride = 2 if blk == 0 and stage > 0 else 1
            down = conv_bn(cin, width, 1, stride) if stride != 1 or cin != width else None
            blocks.append((conv_bn(cin, width, 3, stride), conv_bn(width, width, 3, 1), down))
            cin = width
    fc = rng.standard_normal((1000, 512), dtype=np.float32)

    def forward():
        y = np.maximum(stem(x), 0)
        y = np.pad(y, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
        s = y.strides
        n, c, h, w = y.shape
        oh, ow = (h - 3) // 2 + 1, (w - 3) // 2 + 1
        y = as_strided(y, (n, c, oh, ow, 3, 3), (s[0], s[1], 2 * s[2], 2 * s[3], s[2], s[3])).max(axis=(4, 5))
        for a, b, down in blocks:
            t = b(np.maximum(a(y), 0))
            y = np.maximum(t + (down(y) if down else y), 0)
        return y.mean(axis=(2, 3)) @ fc.T
    return forward


def main():
    build, seed = sys.argv[1], sys.argv[2]
    repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    threads = ["--threads", sys.argv[4]] if len(sys.argv) > 4 else []
    model = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "models",
                         "lenet-11-821.json")
    out = subprocess.run([os.path.join(build, "tests", "bench", "bench_forward")] + threads +
                         ["--weights-dir", os.path.join(seed, "initializer"), model,
                          os.path.join(seed, "input.npz"), str(repeats)],
                         check=True, capture_output=True, text=True).stdout
    print(out, end="")
    engine = {}
    for line in out.splitlines():
        parts = line.split()
        if "no" in parts and "capture" in parts:
            engine[parts[0]] = float(parts[parts.index("median") + 1])
    peers = {"seed": median_ms(lenet_numpy(seed), repeats),
             "resnet18": median_ms(resnet18_numpy(), repeats)}
    for name, ms in peers.items():
        ratio = engine.get(name, float("nan")) / ms
        print("%-10s numpy    float32 im2col+BLAS median %9.1f ms   engine cpu / numpy = %.2f"
              % (name, ms, ratio))


if __name__ == "__main__":
    main()
