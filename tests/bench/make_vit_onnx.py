#!/usr/bin/python3
"""Writes an ONNX model with torchvision vit_b_16's weight shapes (86.6 M float32 values,
about 346 MB, random) and its structure in ops this engine has: patch embedding, class
token, position embedding, 12 encoder blocks (LayerNorm written out as ReduceMean, Sub,
Mul, Sqrt, Div; 12-head attention; an MLP with Gelu), the head. For bench_onnx_load on a
machine without torch (docs/PERFORMANCE.md); the GPU script exports the real vit_b_16.

usage: make_vit_onnx.py OUT.onnx   (Debian's python3-onnx and numpy)
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D, HEADS, LAYERS, MLP, TOKENS, CLASSES = 768, 12, 12, 3072, 197, 1000
rng = np.random.default_rng(16)
inits, nodes = [], []


def weight(name, *shape, scale=0.02):
    inits.append(numpy_helper.from_array(
        (rng.standard_normal(shape, dtype=np.float32) * scale).astype(np.float32), name))
    return name


def const_i64(name, values):
    inits.append(numpy_helper.from_array(np.array(values, np.int64), name))
    return name


def node(op, inputs, name, **attrs):
    nodes.append(helper.make_node(op, inputs, [name], name=name, **attrs))
    return name


def layer_norm(x, p):
    mean = node("ReduceMean", [x], p + "/mean", axes=[-1])
    d = node("Sub", [x, mean], p + "/centered")
    var = node("ReduceMean", [node("Mul", [d, d], p + "/square")], p + "/var", axes=[-1])
    eps = weight(p + "/eps", 1, scale=0)
    inits[-1] = numpy_helper.from_array(np.array([1e-6], np.float32), p + "/eps")
    std = node("Sqrt", [node("Add", [var, eps], p + "/var_eps")], p + "/std")
    y = node("Div", [d, std], p + "/normed")
    return node("Add", [node("Mul", [y, weight(p + ".weight", D, scale=1)], p + "/scaled"),
                        weight(p + ".bias", D)], p)


def main():
    out = sys.argv[1]
    x = "image"
    patches = node("Conv", [x, weight("conv_proj.weight", D, 3, 16, 16),
                            weight("conv_proj.bias", D)], "conv_proj", kernel_shape=[16, 16],
                   strides=[16, 16])
    flat = node("Reshape", [patches, const_i64("flat_shape", [D, TOKENS - 1])], "flatten")
    tokens = node("Transpose", [flat], "tokens", perm=[1, 0])
    cls = weight("class_token", 1, D)
    h = node("Concat", [cls, tokens], "with_class", axis=0)
    h = node("Add", [h, weight("encoder.pos_embedding", TOKENS, D)], "pos")
    heads_shape = const_i64("heads_shape", [TOKENS, HEADS, D // HEADS])
    merge_shape = const_i64("merge_shape", [TOKENS, D])
    for i in range(LAYERS):
        p = f"encoder.layers.{i}"
        a = layer_norm(h, p + ".ln_1")
        parts = []
        for part in "qkv":  # in_proj's 768 x 2304 weight, a third each
            s = node("Add", [node("MatMul", [a, weight(f"{p}.attn.{part}_proj_weight", D, D)],
                                  f"{p}/{part}_mm"), weight(f"{p}.attn.{part}_proj_bias", D)],
                     f"{p}/{part}")
            parts.append(node("Transpose", [node("Reshape", [s, heads_shape], f"{p}/{part}_h")],
                              f"{p}/{part}_t", perm=[1, 0, 2]))
        kt = node("Transpose", [parts[1]], p + "/k_T", perm=[0, 2, 1])
        scores = node("MatMul", [parts[0], kt], p + "/scores")
        scale = weight(p + "/scale", 1, scale=0)
        inits[-1] = numpy_helper.from_array(np.array([0.125], np.float32), p + "/scale")
        attn = node("Softmax", [node("Mul", [scores, scale], p + "/scaled")], p + "/attn",
                    axis=-1)
        ctx = node("MatMul", [attn, parts[2]], p + "/ctx")
        ctx = node("Reshape", [node("Transpose", [ctx], p + "/ctx_t", perm=[1, 0, 2]),
                               merge_shape], p + "/ctx_m")
        o = node("Add", [node("MatMul", [ctx, weight(p + ".attn.out_proj.weight", D, D)],
                              p + "/out_mm"), weight(p + ".attn.out_proj.bias", D)], p + ".attn")
        h = node("Add", [h, o], p + "/res1")
        m = layer_norm(h, p + ".ln_2")
        m = node("Gelu", [node("Add", [node("MatMul", [m, weight(p + ".mlp.0.weight", D, MLP)],
                                            p + "/fc1_mm"), weight(p + ".mlp.0.bias", MLP)],
                               p + "/fc1")], p + "/gelu")
        m = node("Add", [node("MatMul", [m, weight(p + ".mlp.3.weight", MLP, D)], p + "/fc2_mm"),
                         weight(p + ".mlp.3.bias", D)], p + ".mlp")
        h = node("Add", [h, m], p)
    h = layer_norm(h, "encoder.ln")
    # The class token's row, by a product with a one-hot row.
    inits.append(numpy_helper.from_array(np.eye(1, TOKENS, dtype=np.float32), "first_row"))
    first = node("MatMul", ["first_row", h], "class_out")
    node("Gemm", [first, weight("heads.head.weight", CLASSES, D), weight("heads.head.bias", CLASSES)],
         "heads", transB=1)
    graph = helper.make_graph(nodes, "vit_b_16_shapes",
                              [helper.make_tensor_value_info(x, TensorProto.FLOAT, [1, 3, 224, 224])],
                              [helper.make_tensor_value_info("heads", TensorProto.FLOAT, [1, CLASSES])],
                              initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, out)
    n = sum(int(np.prod(t.dims)) for t in inits)
    print(f"{out}: {len(nodes)} nodes, {len(inits)} initializers, {n / 1e6:.1f} M values")


if __name__ == "__main__":
    main()
