#!/usr/bin/python3
"""MaxPool and AveragePool over rows so wide (26000 float32, 104 KB) that no plan
fits half a tile: the planner falls back to the plan needing the least memory
(a few rows per tile), not to everything on one tile. And pools of single rows
wider than a tile (300000 and 200000 float32: a 2-D pool over one row, a 1-D
pool with padding): the planner splits the output columns over tiles. And a
uint8 MaxPool of 1000x1000 planes (the integer one pools in float32, exactly).
Against numpy.

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
rng = np.random.default_rng(2)
row = rng.standard_normal((1, 2, 1, 300000)).astype(np.float32)
line = rng.standard_normal((1, 1, 200000)).astype(np.float32)
row_max = sliding_window_view(row, 9, axis=3)[..., ::4, :].max(axis=-1)
padded = np.pad(line.astype(np.float64), ((0, 0), (0, 0), (3, 3)))
valid = np.pad(np.ones_like(line, dtype=np.float64), ((0, 0), (0, 0), (3, 3)))
sums = sliding_window_view(padded, 7, axis=2)[..., ::2, :].sum(axis=-1)
counts = sliding_window_view(valid, 7, axis=2)[..., ::2, :].sum(axis=-1)
line_avg = (sums / counts).astype(np.float32)
pixels = rng.integers(0, 256, (1, 2, 1000, 1000)).astype(np.uint8)
pixels_max = sliding_window_view(pixels, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(axis=(-1, -2))
vi = helper.make_tensor_value_info
nodes = [helper.make_node("MaxPool", ["x"], ["max"], kernel_shape=[3, 3]),
         helper.make_node("AveragePool", ["x"], ["avg"], kernel_shape=[3, 3]),
         helper.make_node("MaxPool", ["row"], ["row_max"], kernel_shape=[1, 9], strides=[1, 4]),
         helper.make_node("AveragePool", ["line"], ["line_avg"], kernel_shape=[7], strides=[2], pads=[3, 3]),
         helper.make_node("MaxPool", ["pixels"], ["pixels_max"], kernel_shape=[3, 3], strides=[2, 2])]
model = helper.make_model(helper.make_graph(nodes, "pool_wide", [vi("x", TensorProto.FLOAT, list(x.shape)),
                                                                 vi("row", TensorProto.FLOAT, list(row.shape)),
                                                                 vi("line", TensorProto.FLOAT, list(line.shape)),
                                                                 vi("pixels", TensorProto.UINT8, list(pixels.shape))],
                                            [vi("max", TensorProto.FLOAT, [1, 1, 38, 25998]),
                                             vi("avg", TensorProto.FLOAT, [1, 1, 38, 25998]),
                                             vi("row_max", TensorProto.FLOAT, list(row_max.shape)),
                                             vi("line_avg", TensorProto.FLOAT, list(line_avg.shape)),
                                             vi("pixels_max", TensorProto.UINT8, list(pixels_max.shape))]),
                          opset_imports=[helper.make_opsetid("", 13)])  # (uint8 MaxPool: opset 12 on)
onnx.checker.check_model(model)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
onnx.save(model, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", x=x, row=row, line=line, pixels=pixels)
np.savez(f"{out}/expected.npz", max=windows.max(axis=(-1, -2)), avg=windows.astype(np.float64).mean(axis=(-1, -2)).astype(np.float32),
         row_max=row_max, line_avg=line_avg, pixels_max=pixels_max)
