#!/usr/bin/python3
"""MatMulInteger/ConvInteger models on the int8 vertices, with numpy integer references.

Usage: make_integer_ops.py OUT_DIR
Writes OUT_DIR/<case>.onnx, <case>_inputs.npz and <case>_expected.npz for each case:
zero points compiled into the vertices (scalar, or per axis with equal values),
corrected in int32 (per row/column/channel, or fed at run time), long reductions
(int32 partial sums over tiles), padding (which reads as the zero point), groups,
and ORT's dynamic quantization pattern (DynamicQuantizeLinear -> MatMulInteger).
The references accumulate in int64; the products here stay far inside int32.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(11)
N = helper.make_node
ONNX_TYPE = {np.dtype(np.uint8): TensorProto.UINT8, np.dtype(np.int8): TensorProto.INT8,
             np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.int32): TensorProto.INT32}


def ints(dtype, shape):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape).astype(dtype)


def matmul_ref(a, b, za, zb):
    za = np.asarray(za, np.int64)
    zb = np.asarray(zb, np.int64)
    if za.ndim == 1:
        za = za.reshape(-1, 1)  # per row of A
    return np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb).astype(np.int32)


def conv_ref(x, w, zx, zw, pads, strides, group):
    x = x.astype(np.int64) - np.int64(zx)
    zw = np.asarray(zw, np.int64)
    w = w.astype(np.int64) - (zw.reshape(-1, 1, 1, 1) if zw.ndim == 1 else zw)
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))  # centred padding is 0
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    oh, ow = (h - kh) // strides[0] + 1, (wd - kw) // strides[1] + 1
    out = np.zeros((n, m, oh, ow), np.int64)
    mg = m // group
    for g in range(group):
        xs = x[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + strides[0] * oh:strides[0], j:j + strides[1] * ow:strides[1]]
                out[:, g * mg:(g + 1) * mg] += np.einsum("nchw,mc->nmhw", patch, w[g * mg:(g + 1) * mg, :, i, j])
    return out.astype(np.int32)


def save(out, case, nodes, inputs, inits, outputs, expected):
    ins = [helper.make_tensor_value_info(k, ONNX_TYPE[v.dtype], list(v.shape)) for k, v in inputs.items()]
    outs = [helper.make_tensor_value_info(k, ONNX_TYPE[v.dtype], list(v.shape)) for k, v in outputs.items()]
    g = helper.make_graph(nodes, case, ins, outs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, f"{out}/{case}.onnx")
    np.savez(f"{out}/{case}_inputs.npz", **inputs)
    np.savez(f"{out}/{case}_expected.npz", **expected)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)

    # Batched uint8 x int8, long K (int32 partials), a scalar A zero point and
    # a per-column B zero point that differs (an int32 correction).
    a, b = ints(np.uint8, (3, 37, 900)), ints(np.int8, (900, 70))
    za, zb = np.uint8(131), ints(np.int8, (70,))
    y = matmul_ref(a, b, za, zb)
    save(out, "matmul_long", [N("MatMulInteger", ["a", "b", "za", "zb"], ["y"])], {"a": a},
         {"b": b, "za": za, "zb": zb}, {"y": y}, {"y": y})

    # int8 x uint8, both zero points per axis with equal values (compiled in).
    a, b = ints(np.int8, (20, 33)), ints(np.uint8, (33, 19))
    za, zb = np.full(20, -5, np.int8), np.full(19, 77, np.uint8)
    y = matmul_ref(a, b, za, zb)
    save(out, "matmul_uniform", [N("MatMulInteger", ["a", "b", "za", "zb"], ["y"])], {"a": a, "b": b},
         {"za": za, "zb": zb}, {"y": y}, {"y": y})

    # Zero points fed at run time, A's per row: every correction term.
    a, b = ints(np.uint8, (2, 9, 40)), ints(np.uint8, (2, 40, 12))
    za, zb = ints(np.uint8, (9,)), ints(np.uint8, (12,))
    y = matmul_ref(a, b, za, zb)
    save(out, "matmul_runtime_zp", [N("MatMulInteger", ["a", "b", "za", "zb"], ["y"])],
         {"a": a, "b": b, "za": za, "zb": zb}, {}, {"y": y}, {"y": y})

    # ORT's dynamic quantization: DynamicQuantizeLinear, then MatMulInteger with its zero point.
    x = rng.standard_normal((6, 50)).astype(np.float32)
    w = ints(np.int8, (50, 16))
    lo, hi = min(0.0, float(x.min())), max(0.0, float(x.max()))
    scale = np.float32((hi - lo) / 255)
    zp = np.uint8(np.clip(np.rint((0 - lo) / scale), 0, 255))
    xq = np.clip(np.rint(x / scale) + zp, 0, 255).astype(np.uint8)
    y = matmul_ref(xq, w, zp, 0)
    save(out, "matmul_dynamic", [N("DynamicQuantizeLinear", ["x"], ["xq", "s", "z"]),
                                 N("MatMulInteger", ["xq", "w", "z"], ["y"])], {"x": x}, {"w": w}, {"y": y}, {"y": y})

    # Conv: padding (reads as the zero point), stride, scalar zero points compiled in.
    x, w = ints(np.uint8, (2, 5, 13, 11)), ints(np.int8, (7, 5, 3, 3))
    zx, zw = np.uint8(100), np.int8(3)
    pads, strides = [1, 2, 0, 1], [2, 1]
    y = conv_ref(x, w, zx, zw, pads, strides, 1)
    save(out, "conv_padded", [N("ConvInteger", ["x", "w", "zx", "zw"], ["y"], pads=pads, strides=strides)],
         {"x": x}, {"w": w, "zx": zx, "zw": zw}, {"y": y}, {"y": y})

    # Grouped conv with a per-channel weight zero point and an input zero point
    # fed at run time: window-sum corrections, padding included.
    x, w = ints(np.int8, (1, 6, 9, 9)), ints(np.int8, (4, 3, 3, 3))
    zx, zw = np.int8(-7), ints(np.int8, (4,))
    pads = [1, 1, 1, 1]
    y = conv_ref(x, w, zx, zw, pads, [1, 1], 2)
    save(out, "conv_runtime_zp", [N("ConvInteger", ["x", "w", "zx", "zw"], ["y"], pads=pads, group=2)],
         {"x": x, "zx": zx}, {"w": w, "zw": zw}, {"y": y}, {"y": y})

    # A 1x1 conv (the kernel's flat path) with a column tail.
    x, w = ints(np.uint8, (1, 16, 7, 7)), ints(np.int8, (5, 16, 1, 1))
    zx = np.uint8(9)
    y = conv_ref(x, w, zx, 0, [0, 0, 0, 0], [1, 1], 1)
    save(out, "conv_1x1", [N("ConvInteger", ["x", "w", "zx"], ["y"])], {"x": x}, {"w": w, "zx": zx}, {"y": y},
         {"y": y})

    # 1-D conv (the 2-D vertices over a height of 1) with a run-time input zero point,
    # per-channel weight zero points, padding and stride.
    x, w = ints(np.uint8, (2, 4, 17)), ints(np.int8, (3, 4, 5))
    zx, zw = np.uint8(77), ints(np.int8, (3,))
    y = conv_ref(x[:, :, None, :], w[:, :, None, :], zx, zw, [0, 2, 0, 1], [1, 2], 1)[:, :, 0, :]
    save(out, "conv_1d", [N("ConvInteger", ["x", "w", "zx", "zw"], ["y"], pads=[2, 1], strides=[2])],
         {"x": x, "zx": zx}, {"w": w, "zw": zw}, {"y": y}, {"y": y})

    # Many input channels: the conv splits them over tiles (int32 partial sums).
    x, w = ints(np.uint8, (1, 256, 6, 6)), ints(np.int8, (8, 256, 3, 3))
    zx = np.uint8(128)
    y = conv_ref(x, w, zx, 0, [0, 0, 0, 0], [1, 1], 1)
    save(out, "conv_wide", [N("ConvInteger", ["x", "w", "zx"], ["y"])], {"x": x}, {"w": w, "zx": zx}, {"y": y},
         {"y": y})


if __name__ == "__main__":
    main()
