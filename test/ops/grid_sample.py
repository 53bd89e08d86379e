#!/usr/bin/python3
"""GridSample in every mode, padding mode and align_corners, against PyTorch.

Usage: grid_sample.py OUT_DIR
Writes OUT_DIR/model.onnx (one GridSample node per combination, all on the same
X and grid, outputs y_<mode>_<padding>_<align>), inputs.npz and expected.npz
(torch.nn.functional.grid_sample). The grid reaches past the image on every
side, so each padding mode matters.
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

rng = np.random.default_rng(3)
x = rng.standard_normal((2, 3, 5, 7)).astype(np.float32)
grid = rng.uniform(-1.4, 1.4, (2, 4, 6, 2)).astype(np.float32)

nodes, outputs, expected = [], [], {}
for mode in ["nearest", "bilinear", "bicubic"]:
    for padding in ["zeros", "border", "reflection"]:
        for align in [0, 1]:
            name = f"y_{mode}_{padding}_{align}"
            nodes.append(helper.make_node("GridSample", ["x", "grid"], [name], mode=mode, padding_mode=padding,
                                          align_corners=align))
            outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [2, 3, 4, 6]))
            expected[name] = torch.nn.functional.grid_sample(torch.from_numpy(x), torch.from_numpy(grid), mode=mode,
                                                             padding_mode=padding, align_corners=bool(align)).numpy()
inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape)),
          helper.make_tensor_value_info("grid", TensorProto.FLOAT, list(grid.shape))]
model = helper.make_model(helper.make_graph(nodes, "grid_sample", inputs, outputs),
                          opset_imports=[helper.make_opsetid("", 16)])
onnx.checker.check_model(model)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
onnx.save(model, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", x=x, grid=grid)
np.savez(f"{out}/expected.npz", **expected)
