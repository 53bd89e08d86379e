#!/usr/bin/python3
"""Writes larger benchmark models than the samples (seeded, not committed):

    /usr/bin/python3 bench/models.py OUT_DIR

OUT_DIR/<name>/{model.onnx, inputs.npz} for:
  relu_tiny one Relu on [1,4]: the per-call overhead floor of each runtime
  mlp_wide  batch 16: Linear(256,1024) ReLU Linear(1024,1024) ReLU Linear(1024,10) Softmax
  cnn_wide  batch 4, 3x32x32: Conv(3->32) BN ReLU MaxPool Conv(32->64) BN ReLU GAP Linear(64,10)
Then: bench/run.sh samples/mlp/model.onnx samples/cnn/model.onnx OUT_DIR/*/model.onnx
"""
import os
import sys

import numpy as np
import torch
from torch import nn


def relu_tiny():
    return nn.Sequential(nn.ReLU()), (1, 4)


def mlp_wide():
    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 10), nn.Softmax(dim=1)), (16, 256)


def cnn_wide():
    return nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)), (4, 3, 32, 32)


MODELS = {"relu_tiny": relu_tiny, "mlp_wide": mlp_wide, "cnn_wide": cnn_wide}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for name, make in MODELS.items():
        torch.manual_seed(0)
        model, shape = make()
        model.eval()
        x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
        out = os.path.join(sys.argv[1], name)
        os.makedirs(out, exist_ok=True)
        with torch.no_grad():
            torch.onnx.export(model, (x,), os.path.join(out, "model.onnx"), opset_version=13,
                              input_names=["input"], output_names=["output"])
        np.savez(os.path.join(out, "inputs.npz"), input=x.numpy())
        print(f"{out}/model.onnx input {list(shape)}")


if __name__ == "__main__":
    main()
