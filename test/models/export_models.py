#!/usr/bin/python3
"""Export the real-model suite to ONNX (opset 13) with inputs and PyTorch reference outputs.

Usage: export_models.py OUT_DIR [NAME ...]     (default: every model)
Writes OUT_DIR/<name>/model.onnx, inputs.npz, expected.npz. Random weights from fixed
seeds (nothing is downloaded), eval mode, float32. Needs /usr/bin/python3 with torch 1.13
and torchvision 0.14. `build(name)` is also used by bench/real_models.py to rebuild the
same module (same seed → same weights).
"""
import os
import sys
import time

import numpy as np

SEED = 0


def _vision(ctor, **kw):
    def make():
        import torchvision.models as m
        return getattr(m, ctor)(weights=None, **kw), {"input": (1, 3, 224, 224)}
    return make


def _transformer():
    import torch.nn as nn
    layer = nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128, dropout=0.1,
                                       batch_first=True)
    return layer, {"input": (1, 16, 64)}


class _Lstm:
    """2-layer LSTM returning (output, h_n, c_n) as three tensors."""

    @staticmethod
    def make():
        import torch.nn as nn

        class Lstm(nn.Module):
            def __init__(self):
                super().__init__()
                self.lstm = nn.LSTM(input_size=16, hidden_size=32, num_layers=2, batch_first=True)

            def forward(self, x):
                y, (h, c) = self.lstm(x)
                return y, h, c

        return Lstm(), {"input": (1, 10, 16)}


MODELS = {
    "resnet18": _vision("resnet18"),
    "resnet50": _vision("resnet50"),
    "mobilenet_v2": _vision("mobilenet_v2"),
    "squeezenet1_1": _vision("squeezenet1_1"),
    "googlenet": _vision("googlenet", aux_logits=False, init_weights=True),
    "transformer_encoder": _transformer,
    "lstm": _Lstm.make,
}


def _vit():
    """torchvision's ViT-B/16 with a random head. torchvision initialises the head to zero,
    so every output would be 0 whatever the rest of the network computed."""
    import torch.nn as nn
    module, inputs = _vision("vit_b_16")()
    nn.init.normal_(module.heads.head.weight, std=0.02)
    nn.init.normal_(module.heads.head.bias, std=0.02)
    return module, inputs


def _decoder():
    """A small encoder-decoder: strided convolutions down, ConvTranspose up (a U-Net's shape)."""
    import torch.nn as nn
    module = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                           nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(16, 3, 4, 2, 1),
                           nn.Sigmoid())
    return module, {"input": [1, 3, 64, 64]}


# Models exported only by name (not part of the default suite or the bench set): large
# ones (a model that compiles must also run, issue 17) and ones a single test needs.
BIG_MODELS = {
    "vit_b_16": _vit,
    "decoder": _decoder,
}


def build(name):
    """(module in eval mode, {input name: shape}, [output names], [input arrays]) with fixed seeds."""
    import torch
    torch.manual_seed(SEED)
    module, inputs = {**MODELS, **BIG_MODELS}[name]()
    module.eval()
    rng = np.random.default_rng(SEED)
    arrays = [rng.standard_normal(shape).astype(np.float32) for shape in inputs.values()]
    return module, inputs, arrays


def output_names(outputs):
    return ["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))]


def export(name, out_dir):
    import torch
    module, inputs, arrays = build(name)
    feeds = tuple(torch.from_numpy(a) for a in arrays)
    # Not under no_grad: there nn.TransformerEncoderLayer takes its fused fast path
    # (aten::_transformer_encoder_layer_fwd), which has no ONNX export.
    outs = module(*feeds)
    outs = tuple(o.detach() for o in (outs if isinstance(outs, tuple) else (outs,)))
    names = output_names(outs)
    os.makedirs(out_dir, exist_ok=True)
    model_path = os.path.join(out_dir, "model.onnx")
    torch.onnx.export(module, feeds, model_path, opset_version=13, input_names=list(inputs),
                      output_names=names, do_constant_folding=True)
    np.savez(os.path.join(out_dir, "inputs.npz"), **dict(zip(inputs, arrays)))
    np.savez(os.path.join(out_dir, "expected.npz"), **{n: o.numpy() for n, o in zip(names, outs)})


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out_root, names = sys.argv[1], sys.argv[2:] or list(MODELS)
    for name in names:
        if name not in MODELS and name not in BIG_MODELS:
            sys.exit(f"export_models.py: unknown model '{name}' (known: {', '.join(MODELS)})")
    import torch
    torch.set_num_threads(1)
    for name in names:
        t0 = time.time()
        export(name, os.path.join(out_root, name))
        print(f"{name}: exported in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
