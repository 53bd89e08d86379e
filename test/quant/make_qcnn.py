#!/usr/bin/python3
"""A small quantized CNN in both ONNX quantization formats, with numpy references.

Usage: make_qcnn.py OUT_DIR
Writes OUT_DIR/
  float.onnx     Conv(3->8, 3x3) Relu Conv(8->4, 3x3) Relu Flatten MatMul(->10), float32
  qdq.onnx       the same with QuantizeLinear/DequantizeLinear around every tensor (PyTorch's and
                 ORT's QDQ format): int8 weights (per output channel), uint8 activations
  qop.onnx       the same in ORT's operator format: QLinearConv, QLinearMatMul (uint8 in and out)
  qdq_ort.onnx   the QDQ model as ORT's quantizer lays it out (int32 biases, Reshape on uint8),
                 which popc fuses into the operator format
  inputs.npz     x float32 [2,3,10,10]
  expected_float.npz  the float model in numpy
  expected_qdq.npz    the QDQ model in numpy (float arithmetic, round half to even)
  expected_qop.npz    the operator model in numpy integer arithmetic (int32 accumulators)
  expected_qdq_ort.npz  the operator model's output dequantized
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)
W1 = rng.standard_normal((8, 3, 3, 3)).astype(np.float32) * 0.3
B1 = rng.standard_normal(8).astype(np.float32) * 0.1
W2 = rng.standard_normal((4, 8, 3, 3)).astype(np.float32) * 0.2
B2 = rng.standard_normal(4).astype(np.float32) * 0.1
W3 = rng.standard_normal((4 * 6 * 6, 10)).astype(np.float32) * 0.1
X = rng.standard_normal((2, 3, 10, 10)).astype(np.float32)

# Activation scales/zero points (uint8), weight scales per output channel (int8, symmetric).
S_X, Z_X = np.float32(0.02), np.uint8(128)
S_1, Z_1 = np.float32(0.03), np.uint8(0)
S_2, Z_2 = np.float32(0.02), np.uint8(0)
S_Y, Z_Y = np.float32(0.05), np.uint8(120)
def wscale(w, axis):
    m = np.abs(w).max(axis=tuple(i for i in range(w.ndim) if i != axis))
    return (m / 127).astype(np.float32)
SW1, SW2, SW3 = wscale(W1, 0), wscale(W2, 0), wscale(W3, 1)
def qweight(w, s, axis):
    shape = [1] * w.ndim
    shape[axis] = -1
    return np.clip(np.rint(w / s.reshape(shape)), -127, 127).astype(np.int8)
QW1, QW2, QW3 = qweight(W1, SW1, 0), qweight(W2, SW2, 0), qweight(W3, SW3, 1)


def conv(x, w, b=None):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    out = np.zeros((n, m, h - kh + 1, wd - kw + 1), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nchw,mc->nmhw", x[:, :, i:i + out.shape[2], j:j + out.shape[3]], w[:, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def float_ref(x):
    h = np.maximum(conv(x, W1, B1), 0).astype(np.float32)
    h = np.maximum(conv(h, W2, B2), 0).astype(np.float32)
    return (h.reshape(2, -1) @ W3).astype(np.float32)


def q(x, s, z):  # QuantizeLinear to uint8
    return np.clip(np.rint(x / s) + z, 0, 255).astype(np.uint8)


def dq(x, s, z):
    return ((x.astype(np.float32) - np.float32(z)) * s).astype(np.float32)


def qdq_ref(x):
    xq = dq(q(x, S_X, Z_X), S_X, Z_X)
    w1 = dq(QW1, SW1.reshape(-1, 1, 1, 1), 0)
    h = q(np.maximum(conv(xq, w1, B1), 0).astype(np.float32), S_1, Z_1)
    w2 = dq(QW2, SW2.reshape(-1, 1, 1, 1), 0)
    h = q(np.maximum(conv(dq(h, S_1, Z_1), w2, B2), 0).astype(np.float32), S_2, Z_2)
    w3 = dq(QW3, SW3.reshape(1, -1), 0)
    y = q((dq(h, S_2, Z_2).reshape(2, -1) @ w3).astype(np.float32), S_Y, Z_Y)
    return dq(y, S_Y, Z_Y)


# Operator format: int32 biases at scale s_in * s_w, requantization as ONNX QLinearConv.
QB1 = np.rint(B1 / (S_X * SW1)).astype(np.int32)
QB2 = np.rint(B2 / (S_1 * SW2)).astype(np.int32)


def requant(acc, mult, z):
    return np.clip(np.rint(acc.astype(np.float32) * mult) + np.float32(z), 0, 255).astype(np.uint8)


def qop_ref(x):
    xq = q(x, S_X, Z_X)
    acc = conv(xq.astype(np.int64) - int(Z_X), QW1.astype(np.int64)).astype(np.int64) + QB1.reshape(1, -1, 1, 1)
    # Relu folded into the uint8 output range (zero point 0 clamps negatives)
    h = requant(acc, (S_X * SW1 / S_1).astype(np.float32).reshape(1, -1, 1, 1), Z_1)
    acc = conv(h.astype(np.int64) - int(Z_1), QW2.astype(np.int64)).astype(np.int64) + QB2.reshape(1, -1, 1, 1)
    h = requant(acc, (S_1 * SW2 / S_2).astype(np.float32).reshape(1, -1, 1, 1), Z_2)
    acc = (h.reshape(2, -1).astype(np.int64) - int(Z_2)) @ QW3.astype(np.int64)
    return requant(acc, (S_2 * SW3 / S_Y).astype(np.float32).reshape(1, -1), Z_Y)


def c(name, a):
    return numpy_helper.from_array(np.asarray(a), name)


def io(dtype):
    return ([helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 10, 10])],
            [helper.make_tensor_value_info("y", dtype, [2, 10])])


def save(nodes, inits, dtype, path):
    ins, outs = io(dtype)
    shape = c("flat", np.array([2, -1], dtype=np.int64))
    g = helper.make_graph(nodes, "qcnn", ins, outs, inits + [shape])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(m)
    onnx.save(m, path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    N = helper.make_node
    save([N("Conv", ["x", "W1", "B1"], ["c1"]), N("Relu", ["c1"], ["r1"]),
          N("Conv", ["r1", "W2", "B2"], ["c2"]), N("Relu", ["c2"], ["r2"]),
          N("Reshape", ["r2", "flat"], ["f"]), N("MatMul", ["f", "W3"], ["y"])],
         [c("W1", W1), c("B1", B1), c("W2", W2), c("B2", B2), c("W3", W3)], TensorProto.FLOAT,
         f"{out}/float.onnx")

    def qdq(t, s, z):  # QuantizeLinear + DequantizeLinear of activation t
        return [N("QuantizeLinear", [t, s, z], [t + "_q"]), N("DequantizeLinear", [t + "_q", s, z], [t + "_dq"])]
    nodes = qdq("x", "s_x", "z_x") + [
        N("DequantizeLinear", ["qW1", "sW1", "zW1"], ["W1"], axis=0),
        N("Conv", ["x_dq", "W1", "B1"], ["c1"]), N("Relu", ["c1"], ["r1"])] + qdq("r1", "s_1", "z_1") + [
        N("DequantizeLinear", ["qW2", "sW2", "zW2"], ["W2"], axis=0),
        N("Conv", ["r1_dq", "W2", "B2"], ["c2"]), N("Relu", ["c2"], ["r2"])] + qdq("r2", "s_2", "z_2") + [
        N("Reshape", ["r2_dq", "flat"], ["f"]),
        N("DequantizeLinear", ["qW3", "sW3", "zW3"], ["W3"], axis=1),
        N("MatMul", ["f", "W3"], ["m"])] + qdq("m", "s_y", "z_y") + [N("Identity", ["m_dq"], ["y"])]
    save(nodes, [c("s_x", S_X), c("z_x", Z_X), c("s_1", S_1), c("z_1", Z_1), c("s_2", S_2), c("z_2", Z_2),
                 c("s_y", S_Y), c("z_y", Z_Y), c("qW1", QW1), c("sW1", SW1), c("zW1", np.zeros(8, np.int8)),
                 c("qW2", QW2), c("sW2", SW2), c("zW2", np.zeros(4, np.int8)), c("qW3", QW3), c("sW3", SW3),
                 c("zW3", np.zeros(10, np.int8)), c("B1", B1), c("B2", B2)], TensorProto.FLOAT, f"{out}/qdq.onnx")

    nodes = [N("QuantizeLinear", ["x", "s_x", "z_x"], ["xq"]),
             N("QLinearConv", ["xq", "s_x", "z_x", "qW1", "sW1", "zW1", "s_1", "z_1", "qB1"], ["h1"]),
             N("QLinearConv", ["h1", "s_1", "z_1", "qW2", "sW2", "zW2", "s_2", "z_2", "qB2"], ["h2"]),
             N("Reshape", ["h2", "flat"], ["f"]),
             N("QLinearMatMul", ["f", "s_2", "z_2", "qW3", "sW3", "zW3", "s_y", "z_y"], ["y"])]
    save(nodes, [c("s_x", S_X), c("z_x", Z_X), c("s_1", S_1), c("z_1", Z_1), c("s_2", S_2), c("z_2", Z_2),
                 c("s_y", S_Y), c("z_y", Z_Y), c("qW1", QW1), c("sW1", SW1), c("zW1", np.zeros(8, np.int8)),
                 c("qW2", QW2), c("sW2", SW2), c("zW2", np.zeros(4, np.int8)), c("qW3", QW3), c("sW3", SW3),
                 c("zW3", np.zeros(10, np.int8)), c("qB1", QB1), c("qB2", QB2)], TensorProto.UINT8,
         f"{out}/qop.onnx")
    # ORT's quantizer's QDQ layout: int32 biases behind DequantizeLinear (scale
    # s_in * s_w), Reshape on the quantized tensor. popc fuses it into the
    # operator format: the same integers as qop.onnx, dequantized.
    nodes = qdq("x", "s_x", "z_x") + [
        N("DequantizeLinear", ["qW1", "sW1", "zW1"], ["W1"], axis=0), N("DequantizeLinear", ["qB1", "sB1"], ["B1"], axis=0),
        N("Conv", ["x_dq", "W1", "B1"], ["c1"]), N("Relu", ["c1"], ["r1"]),
        N("QuantizeLinear", ["r1", "s_1", "z_1"], ["r1_q"]), N("DequantizeLinear", ["r1_q", "s_1", "z_1"], ["r1_dq"]),
        N("DequantizeLinear", ["qW2", "sW2", "zW2"], ["W2"], axis=0), N("DequantizeLinear", ["qB2", "sB2"], ["B2"], axis=0),
        N("Conv", ["r1_dq", "W2", "B2"], ["c2"]), N("Relu", ["c2"], ["r2"]),
        N("QuantizeLinear", ["r2", "s_2", "z_2"], ["r2_q"]), N("Reshape", ["r2_q", "flat"], ["f_q"]),
        N("DequantizeLinear", ["f_q", "s_2", "z_2"], ["f"]),
        N("DequantizeLinear", ["qW3", "sW3", "zW3"], ["W3"], axis=1),
        N("MatMul", ["f", "W3"], ["m"])] + qdq("m", "s_y", "z_y") + [N("Identity", ["m_dq"], ["y"])]
    save(nodes, [c("s_x", S_X), c("z_x", Z_X), c("s_1", S_1), c("z_1", Z_1), c("s_2", S_2), c("z_2", Z_2),
                 c("s_y", S_Y), c("z_y", Z_Y), c("qW1", QW1), c("sW1", SW1), c("zW1", np.zeros(8, np.int8)),
                 c("qW2", QW2), c("sW2", SW2), c("zW2", np.zeros(4, np.int8)), c("qW3", QW3), c("sW3", SW3),
                 c("zW3", np.zeros(10, np.int8)), c("qB1", QB1), c("sB1", (S_X * SW1).astype(np.float32)),
                 c("qB2", QB2), c("sB2", (S_1 * SW2).astype(np.float32))], TensorProto.FLOAT,
         f"{out}/qdq_ort.onnx")
    np.savez(f"{out}/inputs.npz", x=X)
    np.savez(f"{out}/expected_qdq_ort.npz", y=dq(qop_ref(X), S_Y, Z_Y))
    np.savez(f"{out}/expected_float.npz", y=float_ref(X))
    np.savez(f"{out}/expected_qdq.npz", y=qdq_ref(X))
    np.savez(f"{out}/expected_qop.npz", y=qop_ref(X))
    # The quantization error the float twin is compared within: a few output steps.
    err = np.abs(qdq_ref(X) - float_ref(X)).max()
    print(f"qdq vs float: max |diff| {err:.4f} (output scale {S_Y})")


if __name__ == "__main__":
    main()
