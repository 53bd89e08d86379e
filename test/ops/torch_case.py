"""Shared by the op scripts that export a torch module: the model, its inputs and
PyTorch's outputs in OUT_DIR, as run_op.sh expects them."""
import os

import numpy as np
import torch


def export(net, inputs, names, out, opset=13):
    """Writes out/model.onnx (inputs named after `inputs`' keys, outputs `names`);
    returns PyTorch's outputs {name: array}."""
    os.makedirs(out, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(net, tuple(inputs.values()), f"{out}/model.onnx", input_names=list(inputs),
                          output_names=names, opset_version=opset)
        outputs = net(*inputs.values())
    return {n: o.numpy() for n, o in zip(names, outputs)}


def save(out, inputs, expected):
    """Writes out/inputs.npz (tensors or arrays) and out/expected.npz."""
    np.savez(f"{out}/inputs.npz", **{k: v.numpy() if torch.is_tensor(v) else v for k, v in inputs.items()})
    np.savez(f"{out}/expected.npz", **expected)
