#!/usr/bin/python3
"""The training sample's model and data: a small classifier (2-D points in four
Gaussian clusters -> 4 classes) exported from PyTorch with its loss inside the
graph, and synthetic train/test sets.

usage: make_data.py OUT_DIR [--steps K] [--batch B]
Writes model.onnx (inputs x [B,2], label [B]; outputs loss, logits),
train.npz (x [K,B,2], label [K,B]: K steps of PopART's batches-per-step layout)
and test.npz (x [B,2], label [B]), and the same arrays as raw little-endian
files for the C++ sample (x.bin, label.bin, test_x.bin, test_label.bin).
"""
import argparse
import os

import numpy as np
import torch
import torch.nn.functional as F


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(2, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x, label):
        logits = self.fc2(torch.tanh(self.fc1(x)))
        return F.cross_entropy(logits, label), logits


def points(rng, n):
    centres = np.array([[2, 2], [-2, 2], [-2, -2], [2, -2]], np.float32)
    label = rng.integers(0, 4, n)
    x = centres[label] + rng.normal(0, 0.9, (n, 2)).astype(np.float32)
    return x.astype(np.float32), label.astype(np.int64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, default=16)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Classifier().eval()
    x, y = points(rng, a.batch)
    torch.onnx.export(model, (torch.from_numpy(x), torch.from_numpy(y)), os.path.join(a.out, "model.onnx"),
                      input_names=["x", "label"], output_names=["loss", "logits"], opset_version=13)
    x, y = points(rng, a.steps * a.batch)
    np.savez(os.path.join(a.out, "train.npz"), x=x.reshape(a.steps, a.batch, 2), label=y.reshape(a.steps, a.batch))
    x.tofile(os.path.join(a.out, "x.bin"))
    y.tofile(os.path.join(a.out, "label.bin"))
    x, y = points(rng, a.batch)
    np.savez(os.path.join(a.out, "test.npz"), x=x, label=y)
    x.tofile(os.path.join(a.out, "test_x.bin"))
    y.tofile(os.path.join(a.out, "test_label.bin"))


if __name__ == "__main__":
    main()
