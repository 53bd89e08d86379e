#!/usr/bin/python3
"""Checks every gradient rule on the simulated device against torch.autograd.

For each case: an ONNX model y = OP(a[, b]) with loss = sum(y * R) (R random),
a and b initializers; popc-onnx --train --optimizer sgd --learning-rate 1
gives, after one step, new = old - dLoss/dold, so the gradient is old - new.
torch.autograd computes the same gradient from the same values.

usage: grad_check.py BIN_DIR WORK_DIR [CASE ...]   (exit 1 on any mismatch)
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(5)


def rand(*shape, low=-1.0, high=1.0):
    return rng.uniform(low, high, shape).astype(np.float32)


def ints(v):
    return np.array(v, dtype=np.int64)


# name: (ONNX op, {trainable inputs}, [extra constant inputs (name, array) in
# op input order after the trainables, or None], attributes, torch function)
# Inputs of the op are the trainables in order, then the constants.
CASES = {}


def case(name, op, trainable, torch_fn, consts=(), attrs=None, order=None):
    CASES[name] = dict(op=op, trainable=trainable, fn=torch_fn, consts=list(consts), attrs=attrs or {}, order=order)


pos = dict(low=0.5, high=2.0)
case("add_broadcast", "Add", {"a": rand(3, 4), "b": rand(4)}, lambda a, b: a + b)
case("sub_broadcast", "Sub", {"a": rand(3, 4), "b": rand(3, 1)}, lambda a, b: a - b)
case("mul_broadcast", "Mul", {"a": rand(2, 3, 4), "b": rand(3, 1)}, lambda a, b: a * b)
case("div", "Div", {"a": rand(3, 4), "b": rand(4, **pos)}, lambda a, b: a / b)
case("pow", "Pow", {"a": rand(3, 4, **pos), "b": rand(3, 4)}, lambda a, b: a ** b)
for op, fn, kw in [("Relu", torch.relu, {}), ("Sigmoid", torch.sigmoid, {}), ("Tanh", torch.tanh, {}),
                   ("Exp", torch.exp, {}), ("Log", torch.log, pos), ("Sqrt", torch.sqrt, pos),
                   ("Reciprocal", torch.reciprocal, pos), ("Abs", torch.abs, {}), ("Neg", torch.neg, {}),
                   ("Erf", torch.erf, {}), ("Softplus", F.softplus, {}), ("Sin", torch.sin, {}),
                   ("Cos", torch.cos, {}), ("Identity", lambda x: x, {})]:
    case(op.lower(), op, {"a": rand(3, 5, **kw)}, fn)
case("leakyrelu", "LeakyRelu", {"a": rand(3, 5)}, lambda a: F.leaky_relu(a, 0.1), attrs={"alpha": 0.1})
case("clip", "Clip", {"a": rand(3, 5)}, lambda a: torch.clamp(a, -0.5, 0.5),
     consts=[("lo", np.array(-0.5, np.float32)), ("hi", np.array(0.5, np.float32))])
case("where", "Where", {"a": rand(3, 4), "b": rand(4)},
     lambda c, a, b: torch.where(c, a, b), consts=[("c", rng.uniform(size=(3, 4)) > 0.5)], order=["c", "a", "b"])
case("sum3", "Sum", {"a": rand(3, 4), "b": rand(4), "d": rand(3, 1)}, lambda a, b, d: a + b + d)
case("mean2", "Mean", {"a": rand(3, 4), "b": rand(3, 4)}, lambda a, b: (a + b) / 2)
case("matmul_batched", "MatMul", {"a": rand(2, 3, 4), "b": rand(4, 5)}, torch.matmul)
case("matmul_vector_left", "MatMul", {"a": rand(4), "b": rand(2, 4, 5)}, torch.matmul)
case("matmul_vector_right", "MatMul", {"a": rand(3, 4), "b": rand(4)}, torch.matmul)
case("gemm", "Gemm", {"a": rand(3, 4), "b": rand(4, 5), "c": rand(5)}, lambda a, b, c: 0.5 * a @ b + 2.0 * c,
     attrs={"alpha": 0.5, "beta": 2.0})
case("gemm_trans", "Gemm", {"a": rand(4, 3), "b": rand(5, 4), "c": rand(3, 1)}, lambda a, b, c: a.t() @ b.t() + c,
     attrs={"transA": 1, "transB": 1})
case("reshape", "Reshape", {"a": rand(3, 4)}, lambda a: a.reshape(2, 6), consts=[("s", ints([2, 6]))])
case("flatten", "Flatten", {"a": rand(2, 3, 4)}, lambda a: a.reshape(6, 4), attrs={"axis": 2})
case("transpose", "Transpose", {"a": rand(2, 3, 4)}, lambda a: a.permute(2, 0, 1), attrs={"perm": [2, 0, 1]})
case("concat", "Concat", {"a": rand(2, 3), "b": rand(2, 5)}, lambda a, b: torch.cat([a, b], 1), attrs={"axis": 1})
case("unsqueeze", "Unsqueeze", {"a": rand(3, 4)}, lambda a: a.unsqueeze(1), consts=[("ax", ints([1]))])
case("expand", "Expand", {"a": rand(3, 1)}, lambda a: a.expand(2, 3, 4), consts=[("s", ints([2, 3, 4]))])
case("slice_steps", "Slice", {"a": rand(5, 6)}, lambda a: a[1:5:2, 0:5],
     consts=[("st", ints([1, 0])), ("en", ints([5, 5])), ("ax", ints([0, 1])), ("sp", ints([2, 1]))])
case("pad", "Pad", {"a": rand(3, 4)}, lambda a: F.pad(a, (1, 2, 0, 1)), consts=[("p", ints([0, 1, 1, 2]))])
case("tile", "Tile", {"a": rand(2, 3)}, lambda a: a.repeat(2, 2), consts=[("r", ints([2, 2]))])
case("gather_const", "Gather", {"a": rand(4, 5)}, lambda a: a[:, [3, 0, 3]], consts=[("i", ints([3, 0, 3]))],
     attrs={"axis": 1})
case("gatherelements", "GatherElements", {"a": rand(3, 4)},
     lambda a: torch.gather(a, 1, torch.tensor([[0, 0], [3, 1], [2, 2]])),
     consts=[("i", ints([[0, 0], [3, 1], [2, 2]]))], attrs={"axis": 1})
case("reducesum", "ReduceSum", {"a": rand(2, 3, 4)}, lambda a: a.sum(1), consts=[("ax", ints([1]))],
     attrs={"keepdims": 0})
case("reducemean", "ReduceMean", {"a": rand(2, 3, 4)}, lambda a: a.mean((0, 2), keepdim=True), attrs={"axes": [0, 2]})
case("reducesumsquare", "ReduceSumSquare", {"a": rand(2, 3, 4)}, lambda a: (a * a).sum(2), attrs={"axes": [2], "keepdims": 0})
case("reducemax", "ReduceMax", {"a": rand(2, 3, 4)}, lambda a: a.amax(1), attrs={"axes": [1], "keepdims": 0})
case("reducemin", "ReduceMin", {"a": rand(2, 3, 4)}, lambda a: a.amin((0, 2), keepdim=True), attrs={"axes": [0, 2]})
case("reducel1", "ReduceL1", {"a": rand(2, 3, 4)}, lambda a: a.abs().sum(2), attrs={"axes": [2], "keepdims": 0})
case("reducel2", "ReduceL2", {"a": rand(2, 3, 4)}, lambda a: torch.sqrt((a * a).sum(1)), attrs={"axes": [1], "keepdims": 0})
case("reducelogsum", "ReduceLogSum", {"a": rand(2, 3, 4, **pos)}, lambda a: torch.log(a.sum(1, keepdim=True)),
     attrs={"axes": [1]})
case("reducelogsumexp", "ReduceLogSumExp", {"a": rand(2, 3, 4)}, lambda a: torch.logsumexp(a, 2), attrs={"axes": [2], "keepdims": 0})
# CumSum: every combination of exclusive and reverse (torch has neither flag: flips and shifts).
def _cumsum(a, axis, exclusive, reverse):
    x = a.flip(axis) if reverse else a
    y = torch.cumsum(x, axis)
    if exclusive:
        y = y - x
    return y.flip(axis) if reverse else y
for _ex in (0, 1):
    for _rev in (0, 1):
        case(f"cumsum_ex{_ex}_rev{_rev}", "CumSum", {"a": rand(3, 5)},
             lambda a, _ex=_ex, _rev=_rev: _cumsum(a, 1, _ex, _rev), consts=[("ax", ints(1))],
             attrs={"exclusive": _ex, "reverse": _rev})
# Rows with no zero, one zero and two zeros: the product of the others, exactly (torch.prod).
_prod = rand(2, 3, 4)
_prod[0, 0, 1] = 0.0
_prod[1, 2, 0] = _prod[1, 2, 3] = 0.0
case("reduceprod", "ReduceProd", {"a": _prod}, lambda a: a.prod(2), attrs={"axes": [2], "keepdims": 0})
case("reduceprod_all", "ReduceProd", {"a": rand(2, 3, **pos)}, lambda a: a.prod().reshape(1, 1))
# Recurrent ops in ONNX's layout (W [1, G*H, I], R [1, G*H, H], B [1, 2*G*H]; Y [T, 1, B, H]),
# unrolled by the rnn-decomposition pass for training.
def _onnx_rnn(kind, x, w, r, b, lbr=0):
    H = r.shape[2]
    G = r.shape[1] // H
    h = torch.zeros(x.shape[1], H)
    c = torch.zeros(x.shape[1], H)
    wb, rb = b[0, :G * H], b[0, G * H:]
    ys = []
    for t in range(x.shape[0]):
        xw, hr = x[t] @ w[0].T + wb, h @ r[0].T + rb
        if kind == "LSTM":
            i, o, f, cc = (xw + hr).split(H, dim=1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(cc)
            h = torch.sigmoid(o) * torch.tanh(c)
        elif kind == "GRU":
            z = torch.sigmoid(xw[:, :H] + hr[:, :H])
            rr = torch.sigmoid(xw[:, H:2 * H] + hr[:, H:2 * H])
            if lbr:
                n = torch.tanh(xw[:, 2 * H:] + rr * hr[:, 2 * H:])
            else:
                n = torch.tanh(xw[:, 2 * H:] + (rr * h) @ r[0, 2 * H:].T + rb[2 * H:])
            h = (1 - z) * n + z * h
        else:
            h = torch.tanh(xw + hr)
        ys.append(h)
    return torch.stack(ys).unsqueeze(1)


_x = rand(4, 2, 3)
for _kind, _g, _extra in [("LSTM", 4, {}), ("GRU", 3, {}), ("GRU", 3, {"linear_before_reset": 1}), ("RNN", 1, {})]:
    _lbr = _extra.get("linear_before_reset", 0)
    case(f"{_kind.lower()}{'_lbr' if _lbr else ''}", _kind,
         {"w": rand(1, _g * 5, 3), "r": rand(1, _g * 5, 5), "b": rand(1, 2 * _g * 5)},
         lambda x, w, r, b, k=_kind, l=_lbr: _onnx_rnn(k, x, w, r, b, l), consts=[("x", _x)],
         attrs={"hidden_size": 5, **_extra}, order=["x", "w", "r", "b"])
# sequence_lens shorter than the sequence: each sequence stops at its length (its
# outputs after it are zeros), in reverse from its own last element.
def _onnx_rnn_lens(kind, x, w, r, b, lens, reverse=False):
    ys = []
    for k, n in enumerate(lens.tolist()):
        xk = x[:n, k:k + 1]
        y = _onnx_rnn(kind, xk.flip(0) if reverse else xk, w, r, b)
        y = y.flip(0) if reverse else y
        ys.append(torch.cat([y, torch.zeros(x.shape[0] - n, *y.shape[1:])]))
    return torch.cat(ys, 2)


_lens = np.array([4, 2, 1], dtype=np.int32)
_xl = rand(4, 3, 3)
for _kind, _g, _rev in [("LSTM", 4, False), ("GRU", 3, True)]:
    case(f"{_kind.lower()}_seq_lens{'_reverse' if _rev else ''}", _kind,
         {"w": rand(1, _g * 5, 3), "r": rand(1, _g * 5, 5), "b": rand(1, 2 * _g * 5)},
         lambda x, w, r, b, lens, k=_kind, rev=_rev: _onnx_rnn_lens(k, x, w, r, b, lens, rev),
         consts=[("x", _xl), ("lens", _lens)],
         attrs={"hidden_size": 5, **({"direction": "reverse"} if _rev else {})}, order=["x", "w", "r", "b", "lens"])
case("cast_float", "Cast", {"a": rand(3, 4)}, lambda a: a, attrs={"to": 1})
case("softmax", "Softmax", {"a": rand(2, 3, 4)}, lambda a: torch.softmax(a, 1), attrs={"axis": 1})
case("logsoftmax", "LogSoftmax", {"a": rand(2, 3, 4)}, lambda a: torch.log_softmax(a, -1), attrs={"axis": -1})
case("conv", "Conv", {"x": rand(2, 3, 7, 6), "w": rand(4, 3, 3, 3), "bias": rand(4)},
     lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), attrs={"strides": [2, 2], "pads": [1, 1, 1, 1]})
case("conv_dilated", "Conv", {"x": rand(1, 2, 9, 9), "w": rand(3, 2, 2, 3)},
     lambda x, w: F.conv2d(x, w, stride=(1, 2), padding=(0, 1), dilation=2),
     attrs={"strides": [1, 2], "pads": [0, 1, 0, 1], "dilations": [2, 2]})
case("conv_grouped", "Conv", {"x": rand(2, 4, 6, 6), "w": rand(6, 2, 3, 3)},
     lambda x, w: F.conv2d(x, w, stride=2, padding=1, groups=2),
     attrs={"group": 2, "strides": [2, 2], "pads": [1, 1, 1, 1]})
case("conv_depthwise", "Conv", {"x": rand(2, 3, 5, 5), "w": rand(3, 1, 3, 3), "bias": rand(3)},
     lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=3), attrs={"group": 3, "pads": [1, 1, 1, 1]})
case("conv_grouped_input", "Conv", {"x": rand(1, 4, 5, 5)}, lambda x, w: F.conv2d(x, w, groups=2),
     consts=[("w", rand(4, 2, 3, 3))], attrs={"group": 2})
case("maxpool_overlapping", "MaxPool", {"a": rand(2, 3, 7, 7)},
     lambda a: F.max_pool2d(a, 3, 2, 1), attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]})
case("maxpool_ceil_dilated", "MaxPool", {"a": rand(1, 2, 7, 7)},
     lambda a: F.max_pool2d(a, 2, 2, 0, dilation=2, ceil_mode=True),
     attrs={"kernel_shape": [2, 2], "strides": [2, 2], "dilations": [2, 2], "ceil_mode": 1})
case("averagepool", "AveragePool", {"a": rand(1, 2, 6, 6)}, lambda a: F.avg_pool2d(a, 2),
     attrs={"kernel_shape": [2, 2], "strides": [2, 2]})
# Trained through the window-canonicalization pass: ConvTranspose and 1-D/3-D
# windows as 2-D Convs and pools, and their gradients' ConvTransposes likewise.
case("conv1d", "Conv", {"x": rand(2, 4, 11), "w": rand(6, 2, 3), "bias": rand(6)},
     lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
     attrs={"strides": [2], "pads": [1, 1], "dilations": [2], "group": 2})
case("conv3d", "Conv", {"x": rand(1, 2, 5, 6, 4), "w": rand(3, 2, 2, 3, 2)},
     lambda x, w: F.conv3d(x, w, stride=(2, 1, 1), padding=(1, 1, 0)),
     attrs={"strides": [2, 1, 1], "pads": [1, 1, 0, 1, 1, 0]})
case("convtranspose", "ConvTranspose", {"x": rand(2, 4, 5, 4), "w": rand(4, 3, 3, 3), "bias": rand(6)},
     lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=1, output_padding=1, groups=2),
     attrs={"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1], "group": 2})
case("convtranspose1d", "ConvTranspose", {"x": rand(1, 3, 6), "w": rand(3, 2, 4)},
     lambda x, w: F.conv_transpose1d(x, w, stride=3, padding=2, dilation=2),
     attrs={"strides": [3], "pads": [2, 2], "dilations": [2]})
case("maxpool1d", "MaxPool", {"a": rand(2, 3, 9)}, lambda a: F.max_pool1d(a, 3, 2, 1),
     attrs={"kernel_shape": [3], "strides": [2], "pads": [1, 1]})
case("averagepool3d", "AveragePool", {"a": rand(1, 2, 4, 6, 6)}, lambda a: F.avg_pool3d(a, 2),
     attrs={"kernel_shape": [2, 2, 2], "strides": [2, 2, 2]})
case("globalmaxpool", "GlobalMaxPool", {"a": rand(2, 3, 4, 5)}, lambda a: a.amax((2, 3), keepdim=True))
case("globalaveragepool", "GlobalAveragePool", {"a": rand(2, 3, 4, 5)}, lambda a: a.mean((2, 3), keepdim=True))


def build(name, c, work):
    names = c["order"] or (list(c["trainable"]) + [n for n, _ in c["consts"]])
    inits = [numpy_helper.from_array(v, n) for n, v in c["trainable"].items()]
    inits += [numpy_helper.from_array(v, n) for n, v in c["consts"]]
    t_args = {n: torch.tensor(v, requires_grad=True) for n, v in c["trainable"].items()}
    c_args = {n: torch.tensor(v) for n, v in c["consts"]}
    args = [t_args.get(n, c_args.get(n)) for n in names]
    if c["op"] in ("Reshape", "Unsqueeze", "Expand", "Slice", "Pad", "Tile", "Gather", "GatherElements", "ReduceSum", "Clip",
                   "CumSum"):
        args = [a for n, a in zip(names, args) if n in t_args]  # index/shape constants are baked into fn
    y = c["fn"](*args)
    r = rand(*y.shape)
    (y * torch.tensor(r)).sum().backward()
    inits.append(numpy_helper.from_array(r, "R"))
    nodes = [helper.make_node(c["op"], names, ["y"], **c["attrs"]),
             helper.make_node("Mul", ["y", "R"], ["z"]),
             helper.make_node("ReduceSum", ["z"], ["loss"], keepdims=0)]
    graph = helper.make_graph(nodes, name, [], [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    np.savez(os.path.join(d, "before.npz"), **c["trainable"])
    return d, {n: t.grad.numpy() for n, t in t_args.items()}


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    wanted = sys.argv[3:] or list(CASES)
    failures = []
    for name in wanted:
        c = CASES[name]
        d, expected = build(name, c, work)
        trainable = sum((["--trainable", n] for n in c["trainable"]), [])
        cmd = [os.path.join(bin_dir, "popc-onnx"), os.path.join(d, "model.onnx"), "-o", os.path.join(d, "t.popef"),
               "--train", "--loss", "loss", "--optimizer", "sgd", "--learning-rate", "1"] + trainable
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode == 0:
            run = subprocess.run([os.path.join(bin_dir, "poprun-lite"), os.path.join(d, "t.popef"),
                                  "--save-weights", os.path.join(d, "after.npz"), "--outputs",
                                  os.path.join(d, "out.npz")], capture_output=True, text=True)
        if run.returncode != 0:
            failures.append(f"{name}: {run.stderr.strip()}")
            print(f"FAIL {name}: {run.stderr.strip()}")
            continue
        after = np.load(os.path.join(d, "after.npz"))
        worst = 0.0
        for n, g in expected.items():
            got = c["trainable"][n] - after[n]
            err = float(np.max(np.abs(got - g)) / max(1.0, float(np.max(np.abs(g)))))
            worst = max(worst, err)
        status = "ok  " if worst < 2e-5 else "FAIL"
        print(f"{status} {name}: max error {worst:.2e} (relative to the gradient's scale)")
        if worst >= 2e-5:
            failures.append(name)
    print(f"{len(wanted) - len(failures)} of {len(wanted)} gradient rules match torch.autograd")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
