#!/usr/bin/python3
"""Row-wise ops whose one row is bigger than a tile (624 KiB), which popc runs
as reductions and elementwise ops spread over tiles (the long-row-decomposition
pass), against PyTorch: Softmax over a 100000-entry vocabulary (400 KB rows),
LogSoftmax over a long axis that is not innermost, InstanceNormalization of
384x384 planes (590 KB).

Usage: rows_large.py OUT_DIR
"""
import sys

import torch

import torch_case  # test/ops/torch_case.py

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.InstanceNorm2d(2, affine=True)
        with torch.no_grad():
            self.norm.weight.copy_(torch.tensor([1.5, -0.5]))
            self.norm.bias.copy_(torch.tensor([0.25, 2.0]))

    def forward(self, logits, scores, image):
        return torch.softmax(logits, -1), torch.log_softmax(scores, 1), self.norm(image)


net = Net().eval()
inputs = {"logits": torch.randn(4, 100000) * 4, "scores": torch.randn(2, 30000, 3), "image": torch.randn(1, 2, 384, 384) * 3 + 1}
out = sys.argv[1]
expected = torch_case.export(net, inputs, ["probs", "logprobs", "normed"], out)
torch_case.save(out, inputs, expected)
