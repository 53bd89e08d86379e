#!/usr/bin/python3
"""TfIdfVectorizer in TF, IDF and TFIDF modes with weights, 1- to 3-grams and
skips, int64 input [B, T], against a numpy reference of ONNX's definition (ORT's:
an n-gram of length n >= 2 with skip s is x[i], x[i+s+1], ...; unigrams are
counted once; IDF gives the weight of every n-gram found, TFIDF count * weight).

Usage: tfidf.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

rng = np.random.default_rng(2)
X = rng.integers(0, 5, size=(3, 9)).astype(np.int64)
POOL = [1, 3, 4,  0, 1, 2, 2, 4, 3,  1, 0, 2, 3, 3, 3]  # 3 unigrams, 3 bigrams, 2 trigrams
STARTS = [0, 3, 9]
INDEXES = [7, 0, 2, 1, 5, 3, 6, 4]
WEIGHTS = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 4.0, 0.75]
LO, HI, SKIP = 1, 3, 2


def grams():  # (pool index, n-gram tuple)
    out, p = [], 0
    for n in range(1, len(STARTS) + 1):
        end = STARTS[n] if n < len(STARTS) else len(POOL)
        for j in range((end - STARTS[n - 1]) // n):
            out.append((p, n, tuple(POOL[STARTS[n - 1] + j * n: STARTS[n - 1] + (j + 1) * n])))
            p += 1
    return out


def reference(mode):
    y = np.zeros((X.shape[0], max(INDEXES) + 1), np.float32)
    for b, row in enumerate(X):
        for p, n, g in grams():
            if not LO <= n <= HI:
                continue
            count = 0
            for s in range(SKIP + 1 if n > 1 else 1):
                for i in range(len(row) - (n - 1) * (s + 1)):
                    count += tuple(row[i + k * (s + 1)] for k in range(n)) == g
            w = WEIGHTS[p]
            y[b, INDEXES[p]] = count if mode == "TF" else (w * (count > 0) if mode == "IDF" else w * count)
    return y


nodes, outputs, expected = [], [], {}
for mode in ["TF", "IDF", "TFIDF"]:
    nodes.append(helper.make_node("TfIdfVectorizer", ["x"], [f"y_{mode}"], mode=mode, min_gram_length=LO,
                                  max_gram_length=HI, max_skip_count=SKIP, ngram_counts=STARTS,
                                  ngram_indexes=INDEXES, pool_int64s=POOL, weights=WEIGHTS))
    outputs.append(helper.make_tensor_value_info(f"y_{mode}", TensorProto.FLOAT, [X.shape[0], max(INDEXES) + 1]))
    expected[f"y_{mode}"] = reference(mode)
model = helper.make_model(
    helper.make_graph(nodes, "tfidf", [helper.make_tensor_value_info("x", TensorProto.INT64, list(X.shape))], outputs),
    opset_imports=[helper.make_opsetid("", 13)])
onnx.checker.check_model(model)
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
onnx.save(model, f"{out}/model.onnx")
np.savez(f"{out}/inputs.npz", x=X)
np.savez(f"{out}/expected.npz", **expected)
