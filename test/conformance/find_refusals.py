#!/usr/bin/python3
"""List candidate principled refusals: tests whose output shape depends on the values of
the data (NonZero, Unique, NonMaxSuppression) or whose outputs are random. Prints
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


def reason(model, test_dir):
    g = model.graph
    inits = {t.name for t in g.initializer}
    ordered = [v.name for v in g.input if v.name not in inits]
    inputs = set(ordered)
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
