#!/usr/bin/python3
"""A float16 export of a real model and its PyTorch reference (issue: half precision as the IPU uses it).

Usage: float16.py OUT_DIR NAME      (NAME from export_models.py)
Writes OUT_DIR/model.onnx (every float tensor float16), inputs.npz and expected.npz (float16).
PyTorch 1.13 has no float16 convolutions or matmuls on the CPU, so the reference is the IPU's
arithmetic written out in PyTorch: float16 weights and inputs, every module's result rounded to
float16, and float32 inside each module (the float partials of a float16 matmul or conv).
"""
import os
import sys

import numpy as np
import onnx
import torch
from onnx import TensorProto, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_models  # noqa: E402


def to_float16(model):
    def tensor(t):
        if t.data_type == TensorProto.FLOAT:
            t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    g = model.graph
    for t in g.initializer:
        tensor(t)
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                tensor(a.t)
            if n.op_type == "Cast" and a.name == "to" and a.i == TensorProto.FLOAT:
                a.i = TensorProto.FLOAT16
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.FLOAT16
    return model


def main():
    out_dir, name = sys.argv[1], sys.argv[2]
    torch.set_num_threads(1)
    module, inputs, arrays = export_models.build(name)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(p.half().float())
        for b in module.buffers():
            if b.is_floating_point():
                b.copy_(b.half().float())
    arrays = [a.astype(np.float16) for a in arrays]
    feeds = tuple(torch.from_numpy(a.astype(np.float32)) for a in arrays)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "model.onnx")
    names = None
    outs = module(*feeds)  # the float32 export (rounded weights); see export_models.export
    outs = outs if isinstance(outs, tuple) else (outs,)
    names = export_models.output_names(outs)
    torch.onnx.export(module, feeds, path, opset_version=13, input_names=list(inputs), output_names=names,
                      do_constant_folding=True)
    onnx.save(to_float16(onnx.load(path)), path)
    # The reference: each leaf module's result stored as float16.
    for m in module.modules():
        if not list(m.children()):
            m.register_forward_hook(lambda _m, _i, out: out.half().float() if torch.is_tensor(out) else out)
    outs = module(*feeds)
    outs = outs if isinstance(outs, tuple) else (outs,)
    np.savez(os.path.join(out_dir, "inputs.npz"), **dict(zip(inputs, arrays)))
    np.savez(os.path.join(out_dir, "expected.npz"),
             **{n: o.detach().numpy().astype(np.float16) for n, o in zip(names, outs)})


if __name__ == "__main__":
    main()
