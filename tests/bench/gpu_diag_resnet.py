#!/usr/bin/env python3
"""The ResNet-50-shaped model of bench_cuda.py (torchvision layout, random weights, batch
statistics that are not the trivial 0 and 1) exported to the engine's JSON format with an
input of BATCH images, for tests/bench/gpu_diag.sh.

usage: gpu_diag_resnet.py OUT_DIR [BATCH]    (writes OUT_DIR/resnet50/{model.json,input.npy})
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cuda import Exporter  # noqa: E402


def main():
    out_dir = sys.argv[1]
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    torch.manual_seed(0)
    model = torchvision.models.resnet50(weights=None)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.uniform_(0.5, 1.5)
                m.bias.uniform_(-0.1, 0.1)
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    model.eval()
    folder = os.path.join(out_dir, "resnet50")
    os.makedirs(folder, exist_ok=True)
    Exporter(folder).resnet(model)
    x = torch.randn(batch, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    np.save(os.path.join(folder, "input.npy"), x.numpy())
    print(os.path.join(folder, "model.json"))


if __name__ == "__main__":
    main()
