#!/usr/bin/python3
"""Reductions of tensors too big for one tile (a full reduction of 1 M elements,
4 MB; a product along rows of 400 k), which reduce in two stages over tiles,
against numpy in float64.

Usage: reduce_large.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

rng = np.random.default_rng(6)
x = rng.uniform(0.5, 1.5, (1000, 1000)).astype(np.float32)
y = np.exp(rng.normal(0, 1e-3, (2, 400000))).astype(np.float32)
x64, y64 = x.astype(np.float64), y.astype(np.float64)
refs = {"Mean": x64.mean(), "Max": x64.max(), "Min": x64.min(), "SumSquare": (x64 * x64).sum(),
        "L1": np.abs(x64).sum(), "L2": np.sqrt((x64 * x64).sum()), "LogSum": np.log(x64.sum()),
        "LogSumExp": np.log(np.exp(x64).sum()), "Sum": x64.sum()}
nodes, outputs, expected = [], [], {}
vi = helper.make_tensor_value_info
for op, ref in refs.items():
    nodes.append(helper.make_node("Reduce" + op, ["x"], [op], keepdims=0))
    outputs.append(vi(op, TensorProto.FLOAT, []))
    expected[op] = np.float32(ref)
nodes.append(helper.make_node("ReduceProd", ["y"], ["Prod"], axes=[1], keepdims=1))
outputs.append(vi("Prod", TensorProto.FLOAT, [2, 1]))
expected["Prod"] = y64.prod(1, keepdims=True).astype(np.float32)
model = helper.make_model(helper.make_graph(nodes, "reduce_large", [vi("x", TensorProto.FLOAT, [1000, 1000]),
                                                                      vi("y", TensorProto.FLOAT, [2, 400000])], outputs),
                          opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
onnx.save(model, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", x=x, y=y)
np.savez(f"{out}/expected.npz", **expected)
