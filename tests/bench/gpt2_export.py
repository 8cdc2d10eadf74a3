#!/usr/bin/env python3
"""gpt2_export.py: GPT-2-style decoders and a BERT-style encoder built with torch.nn, random
weights (seeded, no downloads), exported with torch.onnx.export; the models of
tests/bench/gpu_half.sh and of the fingerprint benchmarks, which import this module so both
measure the same files.

Configurations (CONFIGS): gpt2-12 (12 layers, d_model 768, 12 heads, vocab 50257, context
1024: GPT-2 small's shape), gpt2-48 (48 layers, d_model 1600, 25 heads: GPT-2 XL's, 1.56e9
parameters), bert-base (12 layers, d_model 768, 12 heads, vocab 30522, context 512: BERT
base's shape), gpt2-tiny and bert-tiny (2 layers, d_model 32, for the unit tests' fixtures).

The decoder is GPT-2's: token and position embeddings (Gather of int64 ids), pre-norm blocks
of LayerNormalization, causal self-attention written out (Q K^T / sqrt(d_head), a causal
mask made at run time from arange and a comparison, masked_fill with -inf (Where), Softmax
on the last axis, MatMul of 4-D batches), an MLP with tanh-approximated Gelu, and a language
head tied to the token embedding. The encoder is BERT's: token, position and token-type
embeddings, post-norm blocks, an additive attention mask from an int64 input
((1 - mask) * finfo.min), and the erf Gelu.

Exported in float32 by default: gpudiff's --dtype float16 and --dtype bfloat16 then cast the
one file as model.half() and model.bfloat16() cast the module, so gpudiff and PyTorch run
the same rounded weights in both formats from one export (a float16 export cast to bfloat16
would round twice). `--dtype float16` exports a model.half() module instead (float16
initializers), which gpudiff runs as exported.

    python3 gpt2_export.py export NAME OUT.onnx [--batch B] [--seq T] [--dtype float16]
    python3 gpt2_export.py forward NAME IDS.npy OUT.npy [--dtype float16|bfloat16|float32|float64]

The exporter is the TorchScript one (dynamo=False) at opset 17 with constant folding, whose
graphs are plain ONNX ops with the shapes folded; where it fails, the dynamo exporter at
opset 18. Files of 2 GB or more keep their weights in external data beside the model.
"""
import argparse
import math
import os
import sys
import time

import numpy as np

CONFIGS = {
    "gpt2-12": dict(kind="gpt2", n_layer=12, d_model=768, n_head=12, vocab=50257, n_ctx=1024),
    "gpt2-48": dict(kind="gpt2", n_layer=48, d_model=1600, n_head=25, vocab=50257, n_ctx=1024),
    "gpt2-tiny": dict(kind="gpt2", n_layer=2, d_model=32, n_head=2, vocab=256, n_ctx=16),
    "bert-tiny": dict(kind="bert", n_layer=2, d_model=32, n_head=2, vocab=256, n_ctx=16),
    "bert-base": dict(kind="bert", n_layer=12, d_model=768, n_head=12, vocab=30522, n_ctx=512),
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def _modules():
    import torch
    from torch import nn

    class CausalSelfAttention(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.n_head = h

        def forward(self, x):
            b, t, c = x.shape
            h = self.n_head
            q, k, v = self.c_attn(x).split(c, dim=2)
            q = q.view(b, t, h, c // h).transpose(1, 2)
            k = k.view(b, t, h, c // h).transpose(1, 2)
            v = v.view(b, t, h, c // h).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // h))
            pos = torch.arange(t, device=x.device)
            future = pos[None, :] > pos[:, None]
            att = att.masked_fill(future, float("-inf"))
            att = torch.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(b, t, c)
            return self.c_proj(y)

    class DecoderBlock(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.attn = CausalSelfAttention(d, h)
            self.ln_2 = nn.LayerNorm(d)
            self.c_fc = nn.Linear(d, 4 * d)
            self.gelu = nn.GELU(approximate="tanh")
            self.c_proj = nn.Linear(4 * d, d)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(self.gelu(self.c_fc(self.ln_2(x))))

    class GPT2(nn.Module):
        def __init__(self, n_layer, d_model, n_head, vocab, n_ctx, **_):
            super().__init__()
            self.wte = nn.Embedding(vocab, d_model)
            self.wpe = nn.Embedding(n_ctx, d_model)
            self.h = nn.ModuleList([DecoderBlock(d_model, n_head) for _ in range(n_layer)])
            self.ln_f = nn.LayerNorm(d_model)

        def forward(self, input_ids):
            t = input_ids.shape[1]
            pos = torch.arange(t, device=input_ids.device)
            x = self.wte(input_ids) + self.wpe(pos)[None]
            for block in self.h:
                x = block(x)
            return self.ln_f(x) @ self.wte.weight.t()

    class BertSelfAttention(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.query = nn.Linear(d, d)
            self.key = nn.Linear(d, d)
            self.value = nn.Linear(d, d)
            self.n_head = h

        def forward(self, x, add_mask):
            b, t, c = x.shape
            h = self.n_head

            def heads(z):
                return z.view(b, t, h, c // h).transpose(1, 2)

            q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
            att = (q @ k.transpose(-2, -1)) / math.sqrt(c // h) + add_mask
            att = torch.softmax(att, dim=-1)
            return (att @ v).transpose(1, 2).reshape(b, t, c)

    class EncoderBlock(nn.Module):
        def __init__(self, d, h):
            super().__init__()
            self.attn = BertSelfAttention(d, h)
            self.attn_out = nn.Linear(d, d)
            self.ln_1 = nn.LayerNorm(d, eps=1e-12)
            self.inter = nn.Linear(d, 4 * d)
            self.gelu = nn.GELU()
            self.out = nn.Linear(4 * d, d)
            self.ln_2 = nn.LayerNorm(d, eps=1e-12)

        def forward(self, x, add_mask):
            x = self.ln_1(x + self.attn_out(self.attn(x, add_mask)))
            return self.ln_2(x + self.out(self.gelu(self.inter(x))))

    class Bert(nn.Module):
        def __init__(self, n_layer, d_model, n_head, vocab, n_ctx, **_):
            super().__init__()
            self.word = nn.Embedding(vocab, d_model)
            self.position = nn.Embedding(n_ctx, d_model)
            self.token_type = nn.Embedding(2, d_model)
            self.ln = nn.LayerNorm(d_model, eps=1e-12)
            self.layers = nn.ModuleList([EncoderBlock(d_model, n_head) for _ in range(n_layer)])

        def forward(self, input_ids, attention_mask):
            t = input_ids.shape[1]
            pos = torch.arange(t, device=input_ids.device)
            x = self.word(input_ids) + self.position(pos)[None] + \
                self.token_type(torch.zeros_like(input_ids))
            x = self.ln(x)
            dt = x.dtype
            add_mask = (1.0 - attention_mask[:, None, None, :].to(dt)) * torch.finfo(dt).min
            for layer in self.layers:
                x = layer(x, add_mask)
            return x

    return GPT2, Bert


def make_model(name, seed=0, device="cpu"):
    """The model of configuration `name`, float32, eval mode, on device, weights from `seed`
    (drawn on the CPU, so the same on every device): linear and
    embedding weights normal(0, 0.02) as GPT-2 initializes them, biases and the layer norms'
    scales and shifts random around 0 and 1, so none of them is trivially exact."""
    import torch
    gpt2, bert = _modules()
    cfg = CONFIGS[name]
    torch.manual_seed(seed)
    model = (gpt2 if cfg["kind"] == "gpt2" else bert)(**cfg)
    # drawn on the CPU whatever the device, so every device gets the same weights
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, (torch.nn.Linear, torch.nn.Embedding)):
                mod.weight.normal_(0.0, 0.02, generator=gen)
            if isinstance(mod, torch.nn.Linear) and mod.bias is not None:
                mod.bias.normal_(0.0, 0.02, generator=gen)
            if isinstance(mod, torch.nn.LayerNorm):
                mod.weight.normal_(1.0, 0.1, generator=gen)
                mod.bias.normal_(0.0, 0.1, generator=gen)
    return model.to(device).eval()


def make_inputs(name, batch, seq, seed=0):
    """The model's inputs as numpy arrays, in the order of its graph inputs: int64 token ids
    (and for BERT an int64 attention mask whose rows end in a masked tail)."""
    cfg = CONFIGS[name]
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, cfg["vocab"], size=(batch, seq), dtype=np.int64)
    if cfg["kind"] == "gpt2":
        return [ids]
    mask = np.ones((batch, seq), dtype=np.int64)
    for r in range(batch):
        mask[r, seq - (r % max(seq // 2, 1)):] = 0  # row r masks its last r % (seq/2) tokens
    return [ids, mask]


def input_names(name):
    return ["input_ids"] if CONFIGS[name]["kind"] == "gpt2" else ["input_ids", "attention_mask"]


def export_onnx(model, inputs, path, dtype="float32"):
    """Exports model (moved to `dtype` first for float16) with example inputs (numpy) to path.
    Returns a dict: exporter, opset, seconds, bytes (model file plus external data)."""
    import torch
    if dtype == "float16":
        model = model.half()
    elif dtype != "float32":
        raise ValueError("export in float32 or float16, not %s" % dtype)
    dev = next(model.parameters()).device
    args = tuple(torch.from_numpy(a).to(dev) for a in inputs)
    n_params = sum(p.numel() for p in model.parameters())
    big = n_params * (2 if dtype == "float16" else 4) >= (2 << 30) - (64 << 20)
    names = ["input_ids", "attention_mask"][:len(inputs)]
    # the batch is free, so one file runs any batch size (a layer-by-layer diff at batch 1,
    # the timing at batch 8); the sequence stays as exported
    dyn = {n: {0: "batch"} for n in names + ["output"]}
    t0 = time.time()
    errors = []
    info = None
    with torch.no_grad():
        try:
            torch.onnx.export(model, args, path, opset_version=17, dynamo=False,
                              input_names=names, output_names=["output"],
                              dynamic_axes=dyn, do_constant_folding=True)
            info = {"exporter": "torchscript", "opset": 17}
        except Exception as e:  # noqa: BLE001 - report, then the other exporter
            errors.append("torchscript: %s" % e)
        if info is None:
            try:
                batch = torch.export.Dim("batch")
                prog = torch.onnx.export(model, args, dynamo=True, opset_version=18,
                                         input_names=names, output_names=["output"],
                                         dynamic_shapes=tuple({0: batch} for _ in args))
                prog.save(path, external_data=big)
                info = {"exporter": "dynamo", "opset": 18}
            except Exception as e:  # noqa: BLE001
                errors.append("dynamo: %s" % e)
    if info is None:
        raise RuntimeError("; ".join(errors))
    info["seconds"] = time.time() - t0
    folder = os.path.dirname(os.path.abspath(path))
    info["bytes"] = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)
                        if f == os.path.basename(path) or f.startswith(os.path.basename(path)))
    info["params"] = int(n_params)
    info["errors"] = errors
    return info


def torch_forward(model, inputs, dtype, device="cuda"):
    """The model's output as numpy: model.half() (float16), model.bfloat16(), float32 (TF32
    off) or float64, on device, without gradients. Half outputs come back in float32 (exact);
    the module is left in float32 on the device."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    tdt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
           "float64": torch.float64}[dtype]
    m = model.to(device=device, dtype=tdt)
    args = [torch.from_numpy(a).to(device) for a in inputs]
    with torch.no_grad():
        y = m(*args)
    out = y.float().cpu().numpy() if tdt in (torch.float16, torch.bfloat16) else y.cpu().numpy()
    model.to(dtype=torch.float32)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export", help="export a configuration to ONNX, with its inputs")
    e.add_argument("name", choices=sorted(CONFIGS))
    e.add_argument("path")
    e.add_argument("--batch", type=int, default=8)
    e.add_argument("--seq", type=int, default=None, help="default: the context length")
    e.add_argument("--dtype", default="float32", choices=["float32", "float16"])
    e.add_argument("--device", default="cpu")
    e.add_argument("--seed", type=int, default=0)
    f = sub.add_parser("forward", help="PyTorch's output for the inputs export wrote")
    f.add_argument("name", choices=sorted(CONFIGS))
    f.add_argument("out")
    f.add_argument("--batch", type=int, default=8)
    f.add_argument("--seq", type=int, default=None)
    f.add_argument("--dtype", default="float16")
    f.add_argument("--device", default="cuda")
    f.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    seq = a.seq or CONFIGS[a.name]["n_ctx"]
    inputs = make_inputs(a.name, a.batch, seq, a.seed)
    model = make_model(a.name, a.seed, a.device)
    if a.cmd == "export":
        info = export_onnx(model, inputs, a.path, a.dtype)
        stem = os.path.splitext(a.path)[0]
        for n, x in zip(input_names(a.name), inputs):
            np.save("%s.%s.npy" % (stem, n), x)
        log("exported %s: %s" % (a.name, info))
    else:
        np.save(a.out, torch_forward(model, inputs, a.dtype, a.device))


if __name__ == "__main__":
    main()
