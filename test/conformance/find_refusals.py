#!/usr/bin/python3
"""List candidate principled refusals: tests whose output shape depends on the values of
the data (NonZero, Unique, NonMaxSuppression, StringNormalizer with stopwords), whose outputs
are random, that compute on strings, or whose stored data contradicts the model or today's
ONNX semantics. Prints
"suite/test reason" lines for test/conformance/refusals.txt.

Shape, axes, count or condition inputs fed as graph inputs are not refusals: the runner
freezes them to the test's value (what a user does with popc-onnx --freeze-input).

Usage: find_refusals.py [DATA_ROOT]   (default /usr/share/libonnx-testdata/data)
Review the output before committing it: a refusal is a claim that popc cannot support the
test by design (static shapes, DESIGN.md invariant 7), not a to-do list.
"""
import os
import sys

import onnx

DATA_DEPENDENT = {"NonZero": "the number of non-zero elements", "Unique": "the number of unique values",
                  "NonMaxSuppression": "the number of selected boxes"}
# Reference data made with other attribute values than the model carries (checked by hand
# against the generator in onnx/backend/test/case/node/).
BAD_REFERENCE = {"test_adam_multiple": "the reference was computed with epsilon 1e-2 (onnx's adam.py), but the "
                                       "model leaves epsilon at its default 1e-6"}
RANDOM = {"Bernoulli", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike", "Multinomial"}


def fed_value(test_dir, inputs, name):
    """The value the test's first data set feeds to graph input `name` (None if unknown)."""
    from onnx import numpy_helper
    path = os.path.join(test_dir, "test_data_set_0", f"input_{inputs.index(name)}.pb")
    try:
        t = onnx.TensorProto()
        with open(path, "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)
    except Exception:  # noqa: BLE001
        return None


def data_reason(g, ordered, test_dir):
    """Test data that contradicts the model: a static input fed another shape, or a
    float32 -> bfloat16 reference made by truncation (ONNX 1.12's generator; the cast rounds
    to nearest even in PyTorch and in ONNX >= 1.14, and in popc)."""
    import numpy as np
    for v in g.input:
        if v.name not in ordered:
            continue
        dims = v.type.tensor_type.shape.dim
        if not v.type.tensor_type.HasField("shape") or not all(d.HasField("dim_value") for d in dims):
            continue
        data = fed_value(test_dir, ordered, v.name)
        declared = [d.dim_value for d in dims]
        if data is not None and list(data.shape) != declared:
            return (f"test data feeds '{v.name}' with shape {list(data.shape)}, but the model declares it "
                    f"static {declared}")
    bf16_outputs = [i for i, o in enumerate(g.output) if o.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16]
    float_inputs = [v.name for v in g.input if v.name in ordered and v.type.tensor_type.elem_type == onnx.TensorProto.FLOAT]
    if bf16_outputs and float_inputs:
        from onnx import numpy_helper
        x = fed_value(test_dir, ordered, float_inputs[0])
        try:
            t = onnx.TensorProto()
            with open(os.path.join(test_dir, "test_data_set_0", f"output_{bf16_outputs[0]}.pb"), "rb") as f:
                t.ParseFromString(f.read())
            want = numpy_helper.to_array(t).astype(np.uint16).ravel()
        except Exception:  # noqa: BLE001
            return None
        if x is not None and x.dtype == np.float32:
            u = x.view(np.uint32).ravel()
            truncated = (u >> 16).astype(np.uint16)
            rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
            if np.array_equal(want, truncated) and not np.array_equal(want, rounded):
                return ("reference truncates float32 to bfloat16 (ONNX 1.12's generator); popc rounds to nearest "
                        "even, as PyTorch and ONNX >= 1.14 do")
    return None


def string_reason(g):
    """String tensors: the IPU has no string type (neither has PopART), so popc has none."""
    for node in g.node:
        if node.op_type == "StringNormalizer" and any(a.name == "stopwords" and a.strings for a in node.attribute):
            return ("output shape depends on input data (StringNormalizer: the strings left after removing "
                    "stopwords), and it computes on strings, which the IPU has no type for")
    for v in list(g.input) + list(g.output):
        if v.type.HasField("tensor_type") and v.type.tensor_type.elem_type == onnx.TensorProto.STRING:
            return f"'{v.name}' holds strings: the IPU (like PopART) has no string type"
    return None


def reason(model, test_dir):
    g = model.graph
    inits = {t.name for t in g.initializer}
    ordered = [v.name for v in g.input if v.name not in inits]
    inputs = set(ordered)
    why = BAD_REFERENCE.get(os.path.basename(test_dir)) or data_reason(g, ordered, test_dir) or string_reason(g)
    if why:
        return why
    for node in g.node:
        if node.op_type in DATA_DEPENDENT:
            return f"output shape depends on input data ({node.op_type}: {DATA_DEPENDENT[node.op_type]})"
        if node.op_type in RANDOM:
            return f"random output ({node.op_type}): cannot match the stored reference"
        if node.op_type == "Dropout" and len(node.input) > 2 and node.input[2] in inputs:
            ratio = fed_value(test_dir, ordered, node.input[1]) if node.input[1] in inputs else None
            if ratio is None or float(ratio) != 0.0:  # ratio 0 keeps everything: deterministic
                return "random output (training-mode Dropout with a non-zero ratio)"
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/libonnx-testdata/data"
    for suite in ("node", "pytorch-converted", "pytorch-operator", "simple"):
        for test in sorted(os.listdir(os.path.join(root, suite))):
            path = os.path.join(root, suite, test, "model.onnx")
            try:
                model = onnx.load(path, load_external_data=False)
            except Exception:  # noqa: BLE001 - a broken model is the runner's business
                continue
            why = reason(model, os.path.join(root, suite, test))
            if why:
                print(f"{suite}/{test} {why}")


if __name__ == "__main__":
    main()
