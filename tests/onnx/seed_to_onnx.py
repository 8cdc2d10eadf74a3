#!/usr/bin/python3
"""Writes a gpudiff JSON model (schema/json/model.schema.json) and its weights as an ONNX
model: the same nodes, node names, attributes, inputs and outputs, each weight as a float
initializer after the JSON's "dtype" and "transpose". Nodes are named as in the JSON and so
are their outputs, so the ONNX loader names the layers as the JSON loader does.

usage: seed_to_onnx.py MODEL.json WEIGHTS_DIR OUT.onnx   (python3-onnx, numpy)

For the seed case: tests/fixtures/models/lenet-11-821.json with
../shared/cases/lenet-11-821/initializer. Float attributes become ONNX's float32 ones.
"""
import json
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DTYPES = {"float32": TensorProto.FLOAT, "float64": TensorProto.DOUBLE,
          "float16": TensorProto.FLOAT16, "int64": TensorProto.INT64}


def load_weight(w, weights_dir):
    if "values" in w:
        arr = np.array(w["values"], dtype=w.get("dtype", "float32"))
        return arr.reshape(w.get("shape", [len(w["values"])]))
    path = os.path.join(weights_dir, w["file"])
    data = np.load(path)
    arr = data[w["key"]] if hasattr(data, "files") else data
    if "dtype" in w:
        arr = arr.astype(w["dtype"])
    if "transpose" in w:
        arr = np.transpose(arr, w["transpose"])
    if "shape" in w and list(arr.shape) != list(w["shape"]):
        sys.exit(f"weight {w['name']}: shape {arr.shape}, the model says {w['shape']}")
    return np.ascontiguousarray(arr)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_path, weights_dir, out = sys.argv[1:]
    with open(model_path) as f:
        m = json.load(f)
    inputs = []
    for i in m["inputs"]:
        dims = [d if isinstance(d, int) and d >= 0 else "N" for d in i["shape"]]
        inputs.append(helper.make_tensor_value_info(i["name"], DTYPES[i.get("dtype", "float32")],
                                                    dims))
    inits = [numpy_helper.from_array(load_weight(w, weights_dir), w["name"])
             for w in m.get("weights", [])]
    nodes = []
    for n in m["nodes"]:
        outputs = n.get("outputs", [n["name"]])
        attrs = {}
        for k, v in n.get("attrs", {}).items():
            attrs[k] = float(v) if isinstance(v, float) else v
        nodes.append(helper.make_node(n["op"], [x or "" for x in n["inputs"]], outputs,
                                      name=n["name"], **attrs))
    outputs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in m["outputs"]]
    graph = helper.make_graph(nodes, m.get("name", "model"), inputs, outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                              producer_name="gpudiff seed_to_onnx.py")
    model.ir_version = 8
    # The outputs' shapes, which the checker wants, from ONNX's own shape inference.
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
    for o in model.graph.output:
        if o.name in known and known[o.name].type.tensor_type.HasField("shape"):
            o.type.CopyFrom(known[o.name].type)
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
