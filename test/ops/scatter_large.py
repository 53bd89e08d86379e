#!/usr/bin/python3
"""ScatterElements beyond a tile's share, which popc chunks over tiles with a
trash slot per chunk, index band by index band in order (long-row-decomposition):
against PyTorch, a scatter along 200000-long lines, a scatter_add with repeated
indices into a 1-D tensor of 300000, an index_put (ScatterND, a flat
ScatterElements) into a [50000, 8] table; against numpy, a MaxUnpool of a
256x256 plane (a flat ScatterElements of 2 MB).

Usage: scatter_large.py OUT_DIR
"""
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

import torch_case  # test/ops/torch_case.py

torch.manual_seed(0)


class Net(torch.nn.Module):
    def forward(self, lines, at, values, flat, where, adds, table, rows, newrows):
        written = lines.scatter(1, at, values)
        added = flat.scatter_add(0, where, adds)
        put = table.index_put((rows,), newrows)
        return written, added, put


inputs = {
    "lines": torch.randn(2, 200000),
    "at": torch.stack([torch.randperm(200000)[:6000] for _ in range(2)]),  # distinct per row: order-free
    "values": torch.randn(2, 6000),
    "flat": torch.randn(300000),
    "where": torch.randint(0, 300000, (100000,)),  # repeats add up
    "adds": torch.randn(100000),
    "table": torch.randn(50000, 8),
    "rows": torch.randperm(50000)[:3000],
    "newrows": torch.randn(3000, 8),
}
out = sys.argv[1]
expected = torch_case.export(Net(), inputs, ["written", "added", "put"], out, opset=16)
arrays = {k: v.numpy() for k, v in inputs.items()}

# MaxUnpool of a 2x2/2 pool's values and (distinct) flat indices into [1, 2, 256, 256].
rng = np.random.default_rng(3)
pooled = rng.standard_normal((1, 2, 128, 128)).astype(np.float32)
oh, ow = np.meshgrid(np.arange(128), np.arange(128), indexing="ij")
pick = rng.integers(0, 4, (1, 2, 128, 128))
positions = (2 * oh + pick // 2) * 256 + (2 * ow + pick % 2)
flat_index = (np.arange(2)[None, :, None, None] * 256 * 256 + positions).astype(np.int64)
unpooled = np.zeros((1, 2, 256, 256), np.float32).reshape(-1)
unpooled[flat_index.reshape(-1)] = pooled.reshape(-1)
model = onnx.load(f"{out}/model.onnx")
model.graph.node.append(helper.make_node("MaxUnpool", ["pooled", "pool_index"], ["unpooled"], kernel_shape=[2, 2],
                                         strides=[2, 2]))
model.graph.input.extend([helper.make_tensor_value_info("pooled", TensorProto.FLOAT, list(pooled.shape)),
                          helper.make_tensor_value_info("pool_index", TensorProto.INT64, list(flat_index.shape))])
model.graph.output.append(helper.make_tensor_value_info("unpooled", TensorProto.FLOAT, [1, 2, 256, 256]))
onnx.save(model, f"{out}/model.onnx")
arrays.update(pooled=pooled, pool_index=flat_index)
expected["unpooled"] = unpooled.reshape(1, 2, 256, 256)
torch_case.save(out, arrays, expected)
