#!/usr/bin/python3
"""Turn one ONNX backend test data set (input_K.pb / output_K.pb TensorProtos)
into inputs.npz and expected.npz keyed by the graph's input / output names.

Usage: pb_to_npz.py MODEL.onnx DATA_SET_DIR OUT_DIR

input_K.pb maps to the K-th graph input that is not an initializer. Exits 0 on
success and 3 with a one-line "unsupported data: ..." reason when the test
feeds something the npz pipeline cannot carry (sequences, optionals, strings,
bfloat16), so the runner can tell data limits from compiler failures.
"""
import os
import sys
import zipfile

import numpy as np
import onnx
from onnx import numpy_helper

UNSUPPORTED = 3


def unsupported(reason):
    print(f"unsupported data: {reason}")
    sys.exit(UNSUPPORTED)


def value_kind(value_info):
    """'tensor', 'sequence', 'optional', ... from a graph input/output's type."""
    kind = value_info.type.WhichOneof("value")
    return {"tensor_type": "tensor", "sequence_type": "sequence", "optional_type": "optional",
            "map_type": "map", "sparse_tensor_type": "sparse tensor"}.get(kind, str(kind))


def load_tensor(path, value_info):
    kind = value_kind(value_info)
    if kind != "tensor":
        unsupported(f"'{value_info.name}' is a {kind}")
    elem = value_info.type.tensor_type.elem_type
    if elem == onnx.TensorProto.STRING:
        unsupported(f"'{value_info.name}' holds strings")
    if elem == onnx.TensorProto.BFLOAT16:
        unsupported(f"'{value_info.name}' is bfloat16")
    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    # Not np.ascontiguousarray: it turns 0-d scalars into shape (1,).
    return numpy_helper.to_array(tensor).copy(order="C")


def write_npz(path, arrays):
    # Not np.savez(**arrays): numpy 1.24 drops a key named 'like'.
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, array in arrays:
            with z.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, array, allow_pickle=False)


def numbered(data_dir, prefix):
    files = [f for f in os.listdir(data_dir) if f.startswith(prefix) and f.endswith(".pb")]
    return sorted(files, key=lambda f: int(f[len(prefix):-3]))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    model_path, data_dir, out_dir = sys.argv[1:]
    graph = onnx.load(model_path, load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    graph_inputs = [v for v in graph.input if v.name not in initializers]

    for prefix, values, out_name in (("input_", graph_inputs, "inputs.npz"),
                                     ("output_", list(graph.output), "expected.npz")):
        files = numbered(data_dir, prefix)
        if len(files) > len(values):
            sys.exit(f"{data_dir}: {len(files)} {prefix}*.pb files but the graph has only "
                     f"{len(values)} such values")
        arrays = [(values[k].name, load_tensor(os.path.join(data_dir, f), values[k]))
                  for k, f in enumerate(files)]
        write_npz(os.path.join(out_dir, out_name), arrays)


if __name__ == "__main__":
    main()
