#!/usr/bin/python3
"""Writes the small hand-made seeds of the fuzz corpus (called by make_corpus.sh).

    /usr/bin/python3 fuzz/make_seeds.py OUT_DIR

OUT_DIR/npy/*.npy      one array per supported dtype, 0-d, empty, a v2.0 header
OUT_DIR/npz/*.npz      stored and deflated archives, an empty archive
OUT_DIR/onnx/*.onnx    tiny one- or two-node models (also compiled into popef seeds)

Deterministic: fixed data and zip timestamps.
"""
import io
import os
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper

OUT = sys.argv[1]


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def npy_bytes(a, version=None):
    buf = io.BytesIO()
    if version is None:
        np.save(buf, a)
    else:
        np.lib.format.write_array(buf, a, version=version)
    return buf.getvalue()


def npz_bytes(arrays, compress):
    buf = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with zipfile.ZipFile(buf, "w", method) as z:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, npy_bytes(arrays[key]))
    return buf.getvalue()


def npy_seeds():
    seeds = {
        "f32_2x3": np.arange(6, dtype=np.float32).reshape(2, 3),
        "f64_4": np.linspace(-1, 1, 4),
        "f16_3": np.array([0.5, -2, 65504], dtype=np.float16),
        "i8_5": np.arange(-2, 3, dtype=np.int8),
        "i16_2x2": np.array([[1, -1], [300, -300]], dtype=np.int16),
        "i32_1x1x3": np.arange(3, dtype=np.int32).reshape(1, 1, 3),
        "i64_2": np.array([2**40, -5], dtype=np.int64),
        "u8_4": np.arange(4, dtype=np.uint8),
        "bool_3": np.array([True, False, True]),
        "scalar_f32": np.array(3.5, dtype=np.float32),
        "empty_0x3": np.zeros((0, 3), dtype=np.float32),
    }
    for name, a in seeds.items():
        write(f"{OUT}/npy/{name}.npy", npy_bytes(a))
    write(f"{OUT}/npy/v2_f32_2.npy", npy_bytes(np.ones(2, dtype=np.float32), version=(2, 0)))
    # Rejected-but-interesting headers: big-endian and Fortran order.
    write(f"{OUT}/npy/bigendian_i32.npy", npy_bytes(np.arange(3, dtype=">i4")))
    write(f"{OUT}/npy/fortran_2x2.npy", npy_bytes(np.asfortranarray(np.eye(2, dtype=np.float32))))


def npz_seeds():
    arrays = {"a": np.arange(3, dtype=np.float32), "b": np.array([[1, 2]], dtype=np.int64)}
    write(f"{OUT}/npz/stored.npz", npz_bytes(arrays, False))
    write(f"{OUT}/npz/deflated.npz", npz_bytes(arrays, True))
    write(f"{OUT}/npz/one_scalar.npz", npz_bytes({"x": np.array(1.0, dtype=np.float32)}, False))
    write(f"{OUT}/npz/empty.npz", npz_bytes({}, False))


def model(name, nodes, inputs, outputs, inits=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="popc-fuzz-seeds")
    m.ir_version = 7
    onnx.checker.check_model(m)
    write(f"{OUT}/onnx/{name}.onnx", m.SerializeToString())


def vi(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def onnx_seeds():
    model("add", [helper.make_node("Add", ["x", "y"], ["z"])],
          [vi("x", [2, 3]), vi("y", [2, 3])], [vi("z", [2, 3])])
    model("relu", [helper.make_node("Relu", ["x"], ["y"])], [vi("x", [4])], [vi("y", [4])])
    w = helper.make_tensor("w", TensorProto.FLOAT, [3, 2], [0.5, -1, 2, 0.25, 1, 1])
    b = helper.make_tensor("b", TensorProto.FLOAT, [2], [0.1, -0.1])
    model("gemm_tanh", [helper.make_node("Gemm", ["x", "w", "b"], ["h"]),
                        helper.make_node("Tanh", ["h"], ["y"])],
          [vi("x", [2, 3])], [vi("y", [2, 2])], [w, b])
    k = helper.make_tensor("k", TensorProto.FLOAT, [1, 1, 2, 2], [1, 0, 0, 1])
    model("conv_pool", [helper.make_node("Conv", ["x", "k"], ["c"], pads=[0, 0, 1, 1]),
                        helper.make_node("MaxPool", ["c"], ["y"], kernel_shape=[2, 2],
                                         strides=[2, 2])],
          [vi("x", [1, 1, 4, 4])], [vi("y", [1, 1, 2, 2])], [k])
    model("softmax_reshape", [helper.make_node("Softmax", ["x"], ["s"], axis=1),
                              helper.make_node("Reshape", ["s", "shape"], ["y"])],
          [vi("x", [2, 4])], [vi("y", [8])],
          [helper.make_tensor("shape", TensorProto.INT64, [1], [8])])


npy_seeds()
npz_seeds()
onnx_seeds()
