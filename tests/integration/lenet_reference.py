#!/usr/bin/env python3
"""An independent float64 computation of the seed case (shared/cases/lenet-11-821), written
from CASE.md's description with numpy alone, checked against the engine's bundles.

usage: lenet_reference.py SEED_DIR CPU64_BUNDLE CPU_BUNDLE

- every layer of the cpu64 bundle must agree with this computation to 1e-12 relative
  (max |a - b| / max |b| over the layer);
- every layer of the cpu bundle up to fc2 must be within 1e-5 relative of cpu64;
- every .npy file of both bundles must load in numpy unchanged, with the dtype and shape
  run.json gives.
"""
import json
import os
import sys

import numpy as np


def weight(seed, layer, part):
    # The files hold float64; the model casts them to float32, as the frameworks did.
    w = np.load(os.path.join(seed, "initializer", layer, part + ".npz"))["matrix"]
    return w.astype(np.float32).astype(np.float64)


def conv_transpose(x, w, b):
    """ConvTranspose2d, stride 1, no padding: every input pixel spreads w over the output."""
    n, c, h, wd = x.shape
    _, m, kh, kw = w.shape
    out = np.zeros((n, m, h + kh - 1, wd + kw - 1))
    for i in range(kh):
        for j in range(kw):
            out[:, :, i:i + h, j:j + wd] += np.einsum("nchw,cm->nmhw", x, w[:, :, i, j])
    return out + b[None, :, None, None]


def conv(x, w, b, stride):
    """Conv2d without padding: out[n,m,p,q] = sum_{c,i,j} x[n,c,p*sh+i,q*sw+j] w[m,c,i,j] + b[m]."""
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    sh, sw = stride
    oh, ow = (h - kh) // sh + 1, (wd - kw) // sw + 1
    out = np.zeros((n, m, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = x[:, :, i:i + sh * (oh - 1) + 1:sh, j:j + sw * (ow - 1) + 1:sw]
            out += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j])
    return out + b[None, :, None, None]


def maxpool2(x):
    n, c, h, w = x.shape
    h2, w2 = h // 2, w // 2
    return x[:, :, :2 * h2, :2 * w2].reshape(n, c, h2, 2, w2, 2).max(axis=(3, 5))


def reference(seed):
    x = np.load(os.path.join(seed, "input.npz"))["inp"].astype(np.float64)
    layers = {}
    layers["conv1"] = conv_transpose(x, weight(seed, "conv1_mutated", "weight"),
                                     weight(seed, "conv1_mutated", "bias"))
    layers["relu1"] = np.maximum(layers["conv1"], 0.0)
    layers["maxpool1"] = maxpool2(layers["relu1"])
    layers["conv2"] = conv(layers["maxpool1"], weight(seed, "conv2_mutated", "weight"),
                           weight(seed, "conv2_mutated", "bias"), (7, 5))
    c2 = layers["conv2"]
    layers["relu2"] = np.where(c2 > 0, c2, 0.1 * np.expm1(np.minimum(c2, 0.0)))
    layers["maxpool2"] = maxpool2(layers["relu2"])
    layers["flatten"] = layers["maxpool2"].reshape(x.shape[0], -1)
    fc = lambda v, name: v @ weight(seed, name, "weight").T + weight(seed, name, "bias")
    layers["fc1"] = fc(layers["flatten"], "linear1_mutated")
    layers["relu3"] = np.maximum(layers["fc1"], 0.0)
    layers["fc2"] = fc(layers["relu3"], "linear2_mutated")
    layers["relu4"] = np.floor(layers["fc2"])
    layers["output"] = fc(layers["relu4"], "tail_fc")
    return layers


def load_bundle(path):
    with open(os.path.join(path, "run.json")) as f:
        run = json.load(f)
    arrays = {}
    for rec in run["layers"]:
        a = np.load(os.path.join(path, rec["file"]))
        if a.dtype != np.dtype(rec["dtype"]) or list(a.shape) != rec["shape"]:
            raise SystemExit("FAIL: %s: numpy reads %s %s, run.json says %s %s"
                             % (rec["file"], a.dtype, a.shape, rec["dtype"], rec["shape"]))
        arrays[rec["name"]] = a
    return run, arrays


def rel(a, b):
    scale = np.max(np.abs(b))
    return float(np.max(np.abs(a.astype(np.float64) - b)) / (scale if scale > 0 else 1.0))


def main():
    seed, b64, b32 = sys.argv[1:4]
    ref = reference(seed)
    run64, l64 = load_bundle(b64)
    run32, l32 = load_bundle(b32)
    failed = 0
    print("%-9s %14s %14s" % ("layer", "cpu64 vs ref", "cpu vs cpu64"))
    up_to_fc2 = True
    for name, expect in ref.items():
        if name not in l64 or name not in l32:
            print("FAIL: layer %s is missing from a bundle" % name)
            failed += 1
            continue
        e64 = rel(l64[name], expect)
        e32 = rel(l32[name], l64[name].astype(np.float64))
        ok64 = e64 <= 1e-12
        ok32 = e32 <= 1e-5 or not up_to_fc2
        print("%-9s %14.3e %14.3e%s%s" % (name, e64, e32, "" if ok64 else "  <- cpu64 FAIL",
                                          "" if ok32 else "  <- cpu FAIL"))
        failed += (not ok64) + (not ok32)
        if name == "fc2":
            up_to_fc2 = False
    if l64["conv1"].dtype != np.float64 or l32["conv1"].dtype != np.float32:
        print("FAIL: cpu64 layers must be float64 and cpu layers float32")
        failed += 1
    print("%d check(s) failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
