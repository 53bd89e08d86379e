#!/usr/bin/python3
"""LSTM, GRU and RNN layers too big for one tile (the weights alone pass 64 KiB),
which popc unrolls over time into MatMuls spread over tiles, against PyTorch:
a bidirectional batch-first LSTM with initial states, a GRU (PyTorch's
linear_before_reset) and a tanh RNN, exported with torch.onnx.

Usage: rnn_large.py OUT_DIR
"""
import os
import sys

import numpy as np
import torch

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(48, 96, batch_first=True, bidirectional=True)
        self.gru = torch.nn.GRU(192, 80, batch_first=True)
        self.rnn = torch.nn.RNN(80, 120, batch_first=True)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        z, hg = self.gru(y)
        r, hr = self.rnn(z)
        return r, h, c, hg, hr


net = Net().eval()
x = torch.randn(2, 7, 48)
h0 = torch.randn(2, 2, 96) * 0.5
c0 = torch.randn(2, 2, 96) * 0.5
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
names = ["r", "h", "c", "hg", "hr"]
torch.onnx.export(net, (x, h0, c0), f"{out}/model.onnx", input_names=["x", "h0", "c0"], output_names=names,
                  opset_version=13)
with torch.no_grad():
    expected = net(x, h0, c0)
np.savez(f"{out}/inputs.npz", x=x.numpy(), h0=h0.numpy(), c0=c0.numpy())
np.savez(f"{out}/expected.npz", **{n: t.numpy() for n, t in zip(names, expected)})
