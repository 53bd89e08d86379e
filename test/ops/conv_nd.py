#!/usr/bin/python3
"""Conv1d/Conv3d, ConvTranspose1d/2d/3d and 1-D/3-D pooling, which popc runs as
2-D Convs and pools on the tiled planner (the window-canonicalization pass),
against PyTorch: strides, padding, dilation, groups, output_padding, ceil_mode
and count_include_pad, and layers whose operands are bigger than a tile (a
ConvTranspose2d over a 1 MiB input, a Conv3d over 1.6 MiB) that the old
one-tile codelets could not hold.

Usage: conv_nd.py OUT_DIR
"""
import sys

import torch

import torch_case  # test/ops/torch_case.py

torch.manual_seed(0)
nn = torch.nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(6, 8, 5, stride=2, padding=3, dilation=2, groups=2)
        self.t1 = nn.ConvTranspose1d(8, 4, 4, stride=3, padding=1, output_padding=2)
        self.c3 = nn.Conv3d(4, 6, (3, 3, 2), stride=(2, 1, 1), padding=(1, 1, 0), dilation=(1, 2, 1))
        self.t3 = nn.ConvTranspose3d(6, 4, 3, stride=2, padding=1, output_padding=1, groups=2)
        self.t2 = nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1)
        self.t2d = nn.ConvTranspose2d(4, 6, 3, stride=(2, 1), padding=(0, 2), dilation=(1, 2), groups=2)
        self.big3 = nn.Conv3d(16, 16, 3, padding=1)

    def forward(self, a, v, img, vol):
        y1 = self.t1(torch.relu(self.c1(a)))
        p1 = nn.functional.max_pool1d(y1, 3, stride=2, padding=1, dilation=2)
        q1 = nn.functional.avg_pool1d(y1, 4, stride=3, padding=1, ceil_mode=True, count_include_pad=False)
        y3 = self.t3(self.c3(v))
        p3 = nn.functional.max_pool3d(y3, (2, 3, 3), stride=(1, 2, 2), padding=(1, 1, 0))
        q3 = nn.functional.avg_pool3d(y3, 3, stride=2, padding=1, ceil_mode=True)
        big = self.t2(img)
        small = self.t2d(big[:, :4, :9, :11])
        b3 = self.big3(vol)
        return p1, q1, p3, q3, big, small, b3


net = Net().eval()
inputs = {"a": torch.randn(2, 6, 40), "v": torch.randn(1, 4, 6, 9, 8), "img": torch.randn(1, 64, 64, 64),
          "vol": torch.randn(1, 16, 16, 40, 40)}
out = sys.argv[1]
expected = torch_case.export(net, inputs, ["p1", "q1", "p3", "q3", "big", "small", "b3"], out)
torch_case.save(out, inputs, expected)
