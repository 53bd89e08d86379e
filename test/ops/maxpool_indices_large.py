#!/usr/bin/python3
"""MaxPool with its Indices output over planes bigger than a tile's share (300x300
and 3-D 40x64x64: 360 KB and 655 KB), which popc computes as a running max over
the window's strided slices with index arithmetic (long-row-decomposition),
against PyTorch's max_pool with return_indices (torch's export subtracts each
plane's offset from ONNX's flat indices).

Usage: maxpool_indices_large.py OUT_DIR
"""
import sys

import torch

import torch_case  # test/ops/torch_case.py

torch.manual_seed(0)
F = torch.nn.functional


class Net(torch.nn.Module):
    def forward(self, image, volume, line):
        v2, i2 = F.max_pool2d(image, 3, stride=2, padding=1, return_indices=True)
        v3, i3 = F.max_pool3d(volume, (2, 3, 3), stride=(2, 2, 2), padding=(0, 1, 1), return_indices=True)
        v1, i1 = F.max_pool1d(line, 5, stride=3, padding=2, dilation=2, return_indices=True)
        return v2, i2, v3, i3, v1, i1


inputs = {"image": torch.randn(1, 2, 300, 300), "volume": torch.randn(1, 2, 40, 64, 64),
          "line": torch.randn(2, 3, 30000)}
out = sys.argv[1]
expected = torch_case.export(Net(), inputs, ["v2", "i2", "v3", "i3", "v1", "i1"], out)
torch_case.save(out, inputs, expected)
