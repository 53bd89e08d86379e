#!/usr/bin/python3
"""Training-mode Dropout: the mask's keep rate, the update through the mask
(exactly SGD's on x^T (R * mask / (1 - p))), a new mask every step, and the
same mask from the same state (determinism).

Usage: dropout.py BIN_DIR WORK_DIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

P = 0.25


def main():
    bin_dir, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(8)
    x = rng.standard_normal((64, 32)).astype(np.float32)
    w = rng.standard_normal((32, 16)).astype(np.float32) * 0.1
    r = rng.standard_normal((64, 16)).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("Dropout", ["h", "ratio"], ["d", "mask"]),
             helper.make_node("Mul", ["d", "R"], ["z"]),
             helper.make_node("ReduceSum", ["z"], ["loss"], keepdims=0)]
    graph = helper.make_graph(
        nodes, "dropout", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 32])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, []),
         helper.make_tensor_value_info("mask", TensorProto.BOOL, [64, 16])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(r, "R"),
         numpy_helper.from_array(np.array(P, np.float32), "ratio")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]), f"{work}/model.onnx")
    np.savez(f"{work}/data.npz", x=x)
    tool = lambda name: os.path.join(bin_dir, name)
    subprocess.run([tool("popc-onnx"), f"{work}/model.onnx", "-o", f"{work}/t.popef", "--train", "--loss", "loss",
                    "--optimizer", "sgd", "--learning-rate", "1", "--trainable", "W"], check=True)

    def step(tag, iterations=1):
        subprocess.run([tool("poprun-lite"), f"{work}/t.popef", "--inputs", f"{work}/data.npz", "--iterations",
                        str(iterations), "--save-weights", f"{work}/w_{tag}.npz", "--outputs", f"{work}/o_{tag}.npz"],
                       check=True, stdout=subprocess.DEVNULL)
        return np.load(f"{work}/o_{tag}.npz")["mask"], np.load(f"{work}/w_{tag}.npz")["W"]

    mask, w1 = step("a")
    keep = mask.mean()
    assert mask.dtype == np.bool_ and abs(keep - (1 - P)) < 0.05, f"keep rate {keep}, expected {1 - P}"
    want = w - x.T @ (r * mask / np.float32(1 - P))
    err = np.abs(w1 - want).max() / np.abs(want).max()
    assert err < 1e-5, f"the update differs from SGD through the mask by {err}"
    again, _ = step("b")
    assert (again == mask).all(), "the same state drew a different mask"
    second, _ = step("c", iterations=2)
    assert (second != mask).any(), "the second step drew the first step's mask"
    print(f"ok: keep rate {keep:.3f} (expected {1 - P}), update error {err:.1e}, a new mask each step, deterministic")


if __name__ == "__main__":
    main()
