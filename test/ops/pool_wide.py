#!/usr/bin/python3
"""MaxPool and AveragePool over rows so wide (26000 float32, 104 KB) that no plan
fits half a tile: the planner falls back to the plan needing the least memory
(a few rows per tile), not to everything on one tile. Against numpy.

Usage: pool_wide.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from numpy.lib.stride_tricks import sliding_window_view
from onnx import TensorProto, helper

x = np.random.default_rng(1).standard_normal((1, 1, 40, 26000)).astype(np.float32)
windows = sliding_window_view(x, (3, 3), axis=(2, 3))
vi = helper.make_tensor_value_info
nodes = [helper.make_node("MaxPool", ["x"], ["max"], kernel_shape=[3, 3]),
         helper.make_node("AveragePool", ["x"], ["avg"], kernel_shape=[3, 3])]
model = helper.make_model(helper.make_graph(nodes, "pool_wide", [vi("x", TensorProto.FLOAT, list(x.shape))],
                                            [vi("max", TensorProto.FLOAT, [1, 1, 38, 25998]),
                                             vi("avg", TensorProto.FLOAT, [1, 1, 38, 25998])]),
                          opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
onnx.save(model, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", x=x)
np.savez(f"{out}/expected.npz", max=windows.max(axis=(-1, -2)), avg=windows.astype(np.float64).mean(axis=(-1, -2)).astype(np.float32))
