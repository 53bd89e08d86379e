#!/usr/bin/python3
"""TopK, ArgMax/ArgMin and CumSum over rows longer than a tile's share (long-row-decomposition:
the top k of each chunk then of the candidates; chunk cumsums plus the chunks'
carries), against PyTorch: TopK over a 100000-entry row (largest) and along a
long axis that is not innermost (smallest), a float CumSum along a middle axis
and an exact integer one. The float cumsum adds in another order than torch's
sequential one, so it is compared at the scale of its 50000-term sums. Also
CumSum's exclusive and reverse forms on the integer rows, and float16 TopK and
ArgMax over 100000-entry rows, and Hardmax of both, against numpy; LRN across
20000 channels (its window sums as a Conv of ones) against numpy; TopK with a
large k (a merge sort over tiles) against numpy.

Usage: rows_long.py OUT_DIR
"""
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

import torch_case  # test/ops/torch_case.py

torch.manual_seed(0)


class Net(torch.nn.Module):
    def forward(self, logits, scores, seq, iseq):
        v, i = torch.topk(logits, 5, dim=-1)
        v2, i2 = torch.topk(scores, 3, dim=1, largest=False)
        return (v, i, v2, i2, torch.cumsum(seq, dim=1), torch.cumsum(iseq, dim=-1), torch.argmax(logits, -1),
                torch.argmin(scores, 1, keepdim=True))


inputs = {"logits": torch.randn(3, 100000), "scores": torch.randn(2, 40000, 2), "seq": torch.randn(2, 50000, 3),
          "iseq": torch.randint(-5, 5, (4, 70000))}
out = sys.argv[1]
expected = torch_case.export(Net(), inputs, ["v", "i", "v2", "i2", "c", "ci", "amax", "amin"], out)
# exclusive / reverse: ONNX attributes torch.cumsum has no form for.
model = onnx.load(f"{out}/model.onnx")
model.graph.initializer.append(numpy_helper.from_array(np.array(-1, dtype=np.int64), "last"))
iseq = inputs["iseq"].numpy()
for e, r in [(1, 0), (0, 1), (1, 1)]:
    name = f"ci_e{e}_r{r}"
    model.graph.node.append(helper.make_node("CumSum", ["iseq", "last"], [name], exclusive=e, reverse=r))
    model.graph.output.append(helper.make_tensor_value_info(name, TensorProto.INT64, list(iseq.shape)))
    v = iseq[:, ::-1] if r else iseq
    c = np.cumsum(v, axis=-1) - (v if e else 0)
    expected[name] = c[:, ::-1] if r else c


def add_input(name, arr):
    model.graph.input.append(helper.make_tensor_value_info(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[arr.dtype],
                                                           list(arr.shape)))
    inputs[name] = arr


def add_output(name, value):
    model.graph.output.append(helper.make_tensor_value_info(name, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[value.dtype],
                                                            list(value.shape)))
    expected[name] = value


def top_positions(arr, k, largest=True):
    """TopK's order along the last axis: ties by the lower index (a stable sort)."""
    return np.argsort(-arr if largest else arr, axis=1, kind="stable")[:, :k]


# float16 rows: TopK and ArgMax over 100000 halves (many ties: the lower index first,
# as ONNX specifies and a stable numpy sort gives), against numpy.
half = (np.random.default_rng(3).permutation(200000).reshape(2, 100000) / 200.0).astype(np.float16)
add_input("half", half)
model.graph.initializer.append(numpy_helper.from_array(np.array([5], dtype=np.int64), "five"))
model.graph.node.append(helper.make_node("TopK", ["half", "five"], ["hv", "hi"], axis=-1))
model.graph.node.append(helper.make_node("ArgMax", ["half"], ["hamax"], axis=1, keepdims=0))
order = top_positions(half.astype(np.float32), 5)
add_output("hv", np.take_along_axis(half, order, 1))
add_output("hi", order)
add_output("hamax", np.argmax(half, axis=1))
# Hardmax of the 100000-entry rows (ArgMax in two stages, then an Equal), and of
# the float16 ones with ties: the first maximum only.
for name, src, arr in [("hard", "logits", inputs["logits"].numpy()), ("hhard", "half", half)]:
    model.graph.node.append(helper.make_node("Hardmax", [src], [name], axis=-1))
    onehot = np.zeros_like(arr)
    np.put_along_axis(onehot, np.argmax(arr, axis=-1)[:, None], 1, axis=-1)
    add_output(name, onehot)
# LRN across 20000 channels (ONNX's window: floor((size-1)/2) before, ceil after).
channels = np.random.default_rng(4).standard_normal((2, 20000, 2, 3)).astype(np.float32)
size, alpha, beta, bias = 4, 1e-3, 0.75, 2.0
squares = np.pad(channels.astype(np.float64) ** 2, ((0, 0), ((size - 1) // 2, size // 2), (0, 0), (0, 0)))
sums = sum(squares[:, k:k + channels.shape[1]] for k in range(size))
add_input("channels", channels)
model.graph.node.append(helper.make_node("LRN", ["channels"], ["lrn"], size=size, alpha=alpha, beta=beta, bias=bias))
add_output("lrn", (channels / (bias + alpha / size * sums) ** beta).astype(np.float32))
# TopK with k too large for two stages (a merge sort over tiles): half of a
# 40000-entry row, largest, and all of a 30000-entry one, smallest; values with
# many ties (the lower index first).
many = np.random.default_rng(5).integers(0, 1000, (2, 40000)).astype(np.float32)
all_ = np.random.default_rng(6).integers(0, 500, (1, 30000)).astype(np.float32)
for name, arr, k, largest in [("many", many, 20000, 1), ("all_", all_, 30000, 0)]:
    add_input(name, arr)
    model.graph.initializer.append(numpy_helper.from_array(np.array([k], dtype=np.int64), f"{name}_k"))
    model.graph.node.append(helper.make_node("TopK", [name, f"{name}_k"], [f"{name}_v", f"{name}_i"], axis=-1,
                                             largest=largest))
    order = top_positions(arr, k, largest)
    add_output(f"{name}_v", np.take_along_axis(arr, order, 1))
    add_output(f"{name}_i", order)
onnx.save(model, f"{out}/model.onnx")
torch_case.save(out, inputs, expected)
with open(f"{out}/tolerance.txt", "w") as f:
    f.write("--rtol 1e-4 --atol 2e-3")  # sums of up to 50000 standard normals (|sum| ~ 220)
