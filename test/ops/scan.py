#!/usr/bin/python3
"""Scan (opset 16) with two states, two scan inputs on different axes, one read
in reverse, and two scan outputs, one stacked on axis 1 in reverse, against numpy.

Usage: scan.py OUT_DIR
Body: (s, p, x_t, y_t) -> (s + x_t * y_t, p * 0.5 + y_t, s + x_t * y_t, x_t - y_t).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

rng = np.random.default_rng(9)
T = 5
s0 = rng.standard_normal(3).astype(np.float32)
p0 = rng.standard_normal(3).astype(np.float32)
x = rng.standard_normal((3, T)).astype(np.float32)  # scanned along axis 1, in reverse
y = rng.standard_normal((T, 3)).astype(np.float32)  # scanned along axis 0

F = TensorProto.FLOAT
vi = helper.make_tensor_value_info
body = helper.make_graph(
    [helper.make_node("Mul", ["xt", "yt"], ["xy"]), helper.make_node("Add", ["s", "xy"], ["s_out"]),
     helper.make_node("Mul", ["p", "half"], ["ph"]), helper.make_node("Add", ["ph", "yt"], ["p_out"]),
     helper.make_node("Identity", ["s_out"], ["scan_s"]), helper.make_node("Sub", ["xt", "yt"], ["scan_d"])],
    "body", [vi("s", F, [3]), vi("p", F, [3]), vi("xt", F, [3]), vi("yt", F, [3])],
    [vi("s_out", F, [3]), vi("p_out", F, [3]), vi("scan_s", F, [3]), vi("scan_d", F, [3])],
    [helper.make_tensor("half", F, [], [0.5])])
node = helper.make_node("Scan", ["s0", "p0", "x", "y"], ["s_final", "p_final", "ys", "ds"], body=body,
                        num_scan_inputs=2, scan_input_axes=[1, 0], scan_input_directions=[1, 0],
                        scan_output_axes=[0, 1], scan_output_directions=[0, 1])
model = helper.make_model(
    helper.make_graph([node], "scan", [vi("s0", F, [3]), vi("p0", F, [3]), vi("x", F, [3, T]), vi("y", F, [T, 3])],
                      [vi("s_final", F, [3]), vi("p_final", F, [3]), vi("ys", F, [T, 3]), vi("ds", F, [3, T])]),
    opset_imports=[helper.make_opsetid("", 16)])
onnx.checker.check_model(model)

s, p, ys, ds = s0.copy(), p0.copy(), [], []
for t in range(T):
    xt, yt = x[:, T - 1 - t], y[t]
    s = s + xt * yt
    p = p * np.float32(0.5) + yt
    ys.append(s)
    ds.append(xt - yt)
expected = {"s_final": s, "p_final": p, "ys": np.stack(ys, 0), "ds": np.stack(ds[::-1], 1)}
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
onnx.save(model, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", s0=s0, p0=p0, x=x, y=y)
np.savez(f"{out}/expected.npz", **expected)
