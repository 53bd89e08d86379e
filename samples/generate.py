#!/usr/bin/python3
"""Regenerates one sample: samples/<name>/{model.onnx, inputs.npz, expected.npz}.

    /usr/bin/python3 samples/generate.py mlp|cnn [--out DIR]

model.onnx   PyTorch model exported to ONNX (opset 13, eval mode).
inputs.npz   one array per ONNX graph input, keyed by the input name.
expected.npz one array per ONNX graph output, keyed by the output name, computed by PyTorch.

Everything is seeded and the .npz files carry fixed timestamps, so rerunning with the
same torch/numpy/onnx versions reproduces the files byte for byte.
"""
import argparse
import io
import os
import sys
import zipfile

import numpy as np
import onnx
import torch
from torch import nn

OPSET = 13
SEED = 0
ALLOWED_OPS = {
    "Gemm", "MatMul", "Add", "Relu", "Tanh", "Sigmoid", "Softmax", "Conv",
    "BatchNormalization", "MaxPool", "GlobalAveragePool", "Flatten", "Reshape",
}


def mlp():
    model = nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(),
        nn.Linear(128, 64), nn.Tanh(),
        nn.Linear(64, 10), nn.Softmax(dim=1),
    )
    return model, {"input": (4, 64)}


def cnn():
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(8, 16, 3, stride=1, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(16, 10),
    )
    # Non-trivial BatchNorm parameters and running statistics, so a lowering that
    # ignores any of them gives wrong results.
    gen = torch.Generator().manual_seed(SEED + 1)
    with torch.no_grad():
        for m in model:
            if isinstance(m, nn.BatchNorm2d):
                c = m.num_features
                m.weight.copy_(0.5 + torch.rand(c, generator=gen))
                m.bias.copy_(0.2 * torch.randn(c, generator=gen))
                m.running_mean.copy_(0.3 * torch.randn(c, generator=gen))
                m.running_var.copy_(0.5 + torch.rand(c, generator=gen))
    return model, {"input": (2, 3, 16, 16)}


SAMPLES = {"mlp": mlp, "cnn": cnn}


def save_npz(path, arrays):
    """Like numpy.savez, but with fixed member timestamps/attributes (numpy stamps the
    current time), so the file is reproducible."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name in sorted(arrays):
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, buf.getvalue())


def generate(name, out_dir):
    torch.manual_seed(SEED)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)

    model, input_shapes = SAMPLES[name]()
    model.eval()
    gen = torch.Generator().manual_seed(SEED + 2)
    inputs = {k: torch.randn(*s, generator=gen) for k, s in input_shapes.items()}
    input_names = list(inputs)
    output_names = ["output"]

    os.makedirs(out_dir, exist_ok=True)
    model_path = os.path.join(out_dir, "model.onnx")
    with torch.no_grad():
        outputs = model(*inputs.values())
        if isinstance(outputs, torch.Tensor):
            outputs = (outputs,)
        # The CNN keeps its BatchNormalization nodes: PRESERVE (with the model in eval
        # mode) exports inference-mode ops but skips the eval peephole that would fold
        # BatchNormalization into the preceding Conv, and constant folding stays off.
        keep_bn = any(isinstance(m, nn.BatchNorm2d) for m in model.modules())
        torch.onnx.export(
            model, tuple(inputs.values()), model_path,
            opset_version=OPSET,
            input_names=input_names, output_names=output_names,
            training=torch.onnx.TrainingMode.PRESERVE if keep_bn else torch.onnx.TrainingMode.EVAL,
            do_constant_folding=not keep_bn,
        )

    proto = onnx.load(model_path)
    onnx.checker.check_model(proto)
    ops = sorted({n.op_type for n in proto.graph.node})
    bad = set(ops) - ALLOWED_OPS
    if bad:
        sys.exit(f"{name}: exported unexpected ONNX ops {sorted(bad)}")
    graph_inputs = [i.name for i in proto.graph.input]
    graph_outputs = [o.name for o in proto.graph.output]
    assert graph_inputs == input_names, graph_inputs
    assert graph_outputs == output_names, graph_outputs

    save_npz(os.path.join(out_dir, "inputs.npz"), {k: v.numpy() for k, v in inputs.items()})
    save_npz(os.path.join(out_dir, "expected.npz"),
             {k: v.numpy() for k, v in zip(output_names, outputs)})
    print(f"{name}: ops {ops}")
    for k, v in inputs.items():
        print(f"  input  {k} {list(v.shape)} float32")
    for k, v in zip(output_names, outputs):
        print(f"  output {k} {list(v.shape)} float32")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", choices=sorted(SAMPLES))
    parser.add_argument("--out", help="output directory (default: samples/<name>)")
    args = parser.parse_args()
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), args.name)
    generate(args.name, out)


if __name__ == "__main__":
    main()
