"""Small models and references for the multi-IPU tests (docs/multi-ipu.md).

  models.py model mlp|cnn OUT.onnx [--ipus N] [--stages N]
      --ipus N: nodes get __ipu_number (layer i on IPU i*N//layers)
      --stages N: nodes get __pipeline_stage the same way (no __ipu_number)
  models.py inputs mlp|cnn OUT.npz --lead D0,D1,...
      random input of shape lead + micro-batch shape
  models.py expect mlp|cnn IN.npz OUT.npz --lead D0,... [--anchor ALL|EVERYN:k|FINAL|SUM]
      [--bps B] [--accum A] [--repl R]
      the reference (numpy/torch, per micro-batch) laid out as PopART returns the anchor
"""
import argparse

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

MICRO = {"mlp": [2, 16], "cnn": [2, 3, 12, 12]}


def weights(kind):
    rng = np.random.default_rng(7)
    f = lambda *s: (rng.standard_normal(s) * 0.3).astype(np.float32)
    if kind == "mlp":
        return {"w0": f(16, 32), "b0": f(32), "w1": f(32, 32), "b1": f(32), "w2": f(32, 24), "b2": f(24),
                "w3": f(24, 8), "b3": f(8)}
    return {"c0": f(8, 3, 3, 3), "c1": f(8, 8, 3, 3), "c2": f(16, 8, 3, 3), "fc": f(16 * 3 * 3, 10), "fb": f(10)}


def layers(kind):
    """(nodes per layer) built in order; each layer is a list of nodes."""
    if kind == "mlp":
        out = []
        x = "x"
        for i in range(4):
            h, a = f"h{i}", f"a{i}"
            nodes = [helper.make_node("MatMul", [x, f"w{i}"], [h], name=f"mm{i}"),
                     helper.make_node("Add", [h, f"b{i}"], [a if i < 3 else "y"], name=f"add{i}")]
            if i < 3:
                nodes.append(helper.make_node("Relu", [a], [f"r{i}"], name=f"relu{i}"))
                x = f"r{i}"
            out.append(nodes)
        return out
    conv = lambda i, x, y: [helper.make_node("Conv", [x, f"c{i}"], [f"cv{i}"], name=f"conv{i}", pads=[1, 1, 1, 1]),
                            helper.make_node("Relu", [f"cv{i}"], [y], name=f"crelu{i}")]
    return [conv(0, "x", "r0"),
            conv(1, "r0", "r1") + [helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2],
                                                    strides=[2, 2])],
            conv(2, "p1", "r2") + [helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", kernel_shape=[2, 2],
                                                    strides=[2, 2])],
            [helper.make_node("Flatten", ["p2"], ["fl"], name="flat"),
             helper.make_node("MatMul", ["fl", "fc"], ["fm"], name="fcmm"),
             helper.make_node("Add", ["fm", "fb"], ["y"], name="fcadd")]]


def forward(kind, x):
    w = {k: torch.from_numpy(v) for k, v in weights(kind).items()}
    t = torch.from_numpy(x)
    if kind == "mlp":
        for i in range(4):
            t = t @ w[f"w{i}"] + w[f"b{i}"]
            if i < 3:
                t = torch.relu(t)
        return t.numpy()
    F = torch.nn.functional
    t = torch.relu(F.conv2d(t, w["c0"], padding=1))
    t = F.max_pool2d(torch.relu(F.conv2d(t, w["c1"], padding=1)), 2)
    t = F.max_pool2d(torch.relu(F.conv2d(t, w["c2"], padding=1)), 2)
    return (t.flatten(1) @ w["fc"] + w["fb"]).numpy()


def model(kind, path, ipus, stages):
    ls = layers(kind)
    nodes = []
    for i, layer in enumerate(ls):
        for n in layer:
            if ipus:
                n.attribute.append(helper.make_attribute("__ipu_number", i * ipus // len(ls)))
            if stages:
                n.attribute.append(helper.make_attribute("__pipeline_stage", i * stages // len(ls)))
            nodes.append(n)
    inits = [numpy_helper.from_array(v, k) for k, v in weights(kind).items()]
    out_shape = [MICRO[kind][0], 8 if kind == "mlp" else 10]
    g = helper.make_graph(nodes, kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, MICRO[kind])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)


def lead_dims(s):
    return [int(d) for d in s.split(",") if d] if s else []


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd")
    p.add_argument("kind")
    p.add_argument("paths", nargs="+")
    p.add_argument("--ipus", type=int, default=0)
    p.add_argument("--stages", type=int, default=0)
    p.add_argument("--lead", default="")
    p.add_argument("--anchor", default="ALL")
    p.add_argument("--bps", type=int, default=1)
    p.add_argument("--accum", type=int, default=1)
    p.add_argument("--repl", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    if a.cmd == "model":
        model(a.kind, a.paths[0], a.ipus, a.stages)
    elif a.cmd == "inputs":
        shape = lead_dims(a.lead) + MICRO[a.kind]
        x = np.random.default_rng(a.seed).standard_normal(shape).astype(np.float32)
        np.savez(a.paths[0], x=x)
    elif a.cmd == "expect":
        x = np.load(a.paths[0])["x"]
        micro = MICRO[a.kind]
        # PopART layout [batches_per_step, accumulation, replication, micro...].
        flat = x.reshape([a.bps, a.accum, a.repl] + micro)
        y = np.stack([np.stack([np.stack([forward(a.kind, flat[b, c, r]) for r in range(a.repl)])
                                for c in range(a.accum)]) for b in range(a.bps)])  # [B, A, R, out...]
        if a.anchor == "ALL":
            keep = [a.bps, a.accum, a.repl]
        elif a.anchor.startswith("EVERYN:"):
            k = int(a.anchor[7:])
            y = y[k - 1::k]
            keep = [a.bps // k, a.accum, a.repl]
        elif a.anchor == "FINAL":
            y = y[-1:, -1:]
            keep = [1, 1, a.repl]
        elif a.anchor == "SUM":
            y = y.sum(axis=(0, 1), keepdims=True)
            keep = [1, 1, a.repl]
        y = y.reshape([d for d in keep if d > 1] + list(y.shape[3:]))
        np.savez(a.paths[1], y=y.astype(np.float32))


if __name__ == "__main__":
    main()
