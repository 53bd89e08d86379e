#!/usr/bin/python3
"""GatherElements and ScatterElements with run-time indices on tensors far bigger
than a tile (3.6 MB, 5 MB, 10 MB), which popc splits row-wise over tiles (each
row of the indices reads or writes only its own line of the data), against
PyTorch's gather, scatter and scatter_add, along the innermost axis and along
an axis that is not. Lines longer than a tile's share (the 150000-long rows;
a GridSample of a 512x512 image, a GatherElements from each 1 MB plane) are
also split into chunks and index bands (long-row-decomposition). A gather and a
scatter whose indices cover only a corner of a 5.4 MB tensor (200 x 300 of
1500 x 900) run on that corner (index-decomposition).

Usage: elements_large.py OUT_DIR
"""
import sys

import torch

import torch_case  # test/ops/torch_case.py

torch.manual_seed(0)


class Net(torch.nn.Module):
    def forward(self, table, idx, cube, cidx, grid, sidx, updates, aidx, adds, image, flow, wide, widx, wupd):
        picked = torch.gather(table, 2, idx)
        # indices narrower than the data in the other dims: only that corner is read or written
        corner = torch.gather(wide, 0, widx)
        pasted = wide.scatter(0, widx, wupd)
        across = torch.gather(cube, 1, cidx)
        written = grid.scatter(2, sidx, updates)
        added = grid.scatter_add(1, aidx, adds)
        warped = torch.nn.functional.grid_sample(image, flow, mode="bilinear", padding_mode="border",
                                                 align_corners=False)
        return picked, across, written, added, warped, corner, pasted


inputs = {
    "table": torch.randn(2, 3, 150000),
    "idx": torch.randint(0, 150000, (2, 3, 1000)),
    "cube": torch.randn(64, 5000, 4),
    "cidx": torch.randint(0, 5000, (64, 100, 4)),
    "grid": torch.randn(2, 64, 20000),
    # distinct positions per row, so scatter's result does not depend on the order of writes
    "sidx": torch.stack([torch.stack([torch.randperm(20000)[:300] for _ in range(64)]) for _ in range(2)]),
    "updates": torch.randn(2, 64, 300),
    "aidx": torch.randint(0, 64, (2, 16, 20000)),
    "adds": torch.randn(2, 16, 20000),
    "image": torch.randn(1, 3, 512, 512),
    "flow": torch.rand(1, 256, 256, 2) * 2.2 - 1.1,
    "wide": torch.randn(1500, 900),
    # distinct rows per column, so scatter's result does not depend on the order of writes
    "widx": torch.stack([torch.randperm(1500)[:200] for _ in range(300)], 1),
    "wupd": torch.randn(200, 300),
}
net = Net().eval()
out = sys.argv[1]
expected = torch_case.export(net, inputs, ["picked", "across", "written", "added", "warped", "corner", "pasted"], out,
                             opset=16)
torch_case.save(out, inputs, expected)
