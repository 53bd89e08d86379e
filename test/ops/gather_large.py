#!/usr/bin/python3
"""Gather with run-time indices too big for one tile, against numpy: an
embedding table [5000, 64] (1.3 MB, more than a tile's 624 KiB; its columns
are split over tiles), a table gathered along axis 1 with outer rows, and a
small table [2, 768] gathered by [4, 128] indices (BERT's token types: a 1.5 MB
output, whose indices are split into bands over tiles).

Usage: gather_large.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(4)
table = rng.standard_normal((5000, 64)).astype(np.float32)
wide = rng.standard_normal((3, 4000, 30)).astype(np.float32)
ids = rng.integers(-5000, 5000, size=(2, 7)).astype(np.int64)
cols = rng.integers(0, 4000, size=(5,)).astype(np.int64)
types = rng.standard_normal((2, 768)).astype(np.float32)
type_ids = rng.integers(0, 2, size=(4, 128)).astype(np.int64)
nodes = [helper.make_node("Gather", ["table", "ids"], ["emb"]),
         helper.make_node("Gather", ["wide", "cols"], ["picked"], axis=1),
         helper.make_node("Gather", ["types", "type_ids"], ["typed"])]
vi = helper.make_tensor_value_info
model = helper.make_model(
    helper.make_graph(nodes, "gather_large", [vi("ids", TensorProto.INT64, [2, 7]), vi("cols", TensorProto.INT64, [5]),
                                              vi("type_ids", TensorProto.INT64, [4, 128])],
                      [vi("emb", TensorProto.FLOAT, [2, 7, 64]), vi("picked", TensorProto.FLOAT, [3, 5, 30]),
                       vi("typed", TensorProto.FLOAT, [4, 128, 768])],
                      [numpy_helper.from_array(table, "table"), numpy_helper.from_array(wide, "wide"),
                       numpy_helper.from_array(types, "types")]),
    opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
onnx.save(model, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", ids=ids, cols=cols, type_ids=type_ids)
np.savez(f"{out}/expected.npz", emb=table[ids], picked=wide[:, cols], typed=types[type_ids])
