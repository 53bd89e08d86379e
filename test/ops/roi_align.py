#!/usr/bin/python3
"""RoiAlign in avg and max mode, half_pixel and output_half_pixel, fixed and
adaptive sampling, against a numpy reference of ONNX's definition (ORT's max
mode: the largest weighted corner of each sample); the avg cases are first
checked against torchvision.ops.roi_align.

Usage: roi_align.py OUT_DIR
Writes OUT_DIR/model.onnx (one RoiAlign per combination; rois fed at run time,
except for adaptive sampling, which needs them as a constant), inputs.npz and
expected.npz.
"""
import math
import os
import sys

import numpy as np
import onnx
import torch
import torchvision
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(5)
X = rng.standard_normal((2, 3, 9, 11)).astype(np.float32)
# Boxes (x1, y1, x2, y2) in input pixels before spatial_scale; some reach past the image.
ROIS = np.array([[0, 0, 8, 6], [3.3, 1.7, 19.5, 15.2], [-4, -3, 5, 4], [10, 2, 12.5, 30], [6, 6, 6.5, 6.2]],
                np.float32)
BATCH = np.array([0, 1, 1, 0, 1], np.int64)
SCALE = 0.5


def bilinear(img, y, x):  # img [C, H, W]; ONNX/Caffe2 rules; returns the 4 weighted corners
    C, H, W = img.shape
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return [np.zeros(C)] * 4
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yh = yl = H - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xh = xl = W - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    return [hy * hx * img[:, yl, xl], hy * lx * img[:, yl, xh], ly * hx * img[:, yh, xl], ly * lx * img[:, yh, xh]]


def reference(mode, ph, pw, ratio, half_pixel):
    out = np.zeros((len(ROIS), X.shape[1], ph, pw))
    off = 0.5 if half_pixel else 0.0
    for r, (roi, b) in enumerate(zip(ROIS.astype(np.float64), BATCH)):
        x1, y1, x2, y2 = roi * SCALE - off
        rw, rh = x2 - x1, y2 - y1
        if not half_pixel:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        bh, bw = rh / ph, rw / pw
        gh = ratio if ratio > 0 else math.ceil(rh / ph)
        gw = ratio if ratio > 0 else math.ceil(rw / pw)
        for i in range(ph):
            for j in range(pw):
                vals = []
                for iy in range(gh):
                    for ix in range(gw):
                        c = bilinear(X[b].astype(np.float64), y1 + i * bh + (iy + .5) * bh / gh,
                                     x1 + j * bw + (ix + .5) * bw / gw)
                        vals.append(sum(c) if mode == "avg" else np.max(c, axis=0))
                out[r, :, i, j] = np.mean(vals, axis=0) if mode == "avg" else np.max(vals, axis=0)
    return out.astype(np.float32)


cases = []
for mode in ["avg", "max"]:
    for half_pixel in [True, False]:
        for ratio in [2, 0]:
            cases.append((mode, half_pixel, ratio))
nodes, outputs, inits, expected = [], [], [], {}
boxes = torch.from_numpy(np.concatenate([BATCH[:, None].astype(np.float32), ROIS], axis=1))
for mode, half_pixel, ratio in cases:
    name = f"y_{mode}_{'half' if half_pixel else 'output'}_{ratio}"
    ph, pw = 3, 4
    rois = "rois" if ratio else "rois_const"
    nodes.append(helper.make_node("RoiAlign", ["x", rois, "batch"], [name], mode=mode, output_height=ph,
                                  output_width=pw, sampling_ratio=ratio, spatial_scale=SCALE,
                                  coordinate_transformation_mode="half_pixel" if half_pixel else "output_half_pixel"))
    outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [len(ROIS), 3, ph, pw]))
    expected[name] = reference(mode, ph, pw, ratio, half_pixel)
    if mode == "avg":
        tv = torchvision.ops.roi_align(torch.from_numpy(X), boxes, (ph, pw), SCALE, ratio, aligned=half_pixel).numpy()
        assert np.allclose(tv, expected[name], rtol=1e-4, atol=1e-5), name
inits.append(numpy_helper.from_array(ROIS, "rois_const"))
inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(X.shape)),
          helper.make_tensor_value_info("rois", TensorProto.FLOAT, list(ROIS.shape)),
          helper.make_tensor_value_info("batch", TensorProto.INT64, list(BATCH.shape))]
model = helper.make_model(helper.make_graph(nodes, "roi_align", inputs, outputs, inits),
                          opset_imports=[helper.make_opsetid("", 16)])
onnx.checker.check_model(model)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
onnx.save(model, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", x=X, rois=ROIS, batch=BATCH)
np.savez(f"{out}/expected.npz", **expected)
