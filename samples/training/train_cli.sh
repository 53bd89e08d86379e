#!/usr/bin/env bash
# The training sample through the command-line tools: compile a training step
# with Adam, run every step of the dataset in one poprun-lite call
# (--batches-per-step: the loss of each step comes back), write the trained
# model, then compile that model for inference and measure its accuracy.
# Usage: train_cli.sh BIN_DIR WORK_DIR [MIN_ACCURACY]
set -euo pipefail
bin=$1
work=$2
min_accuracy=${3:-0.9}
here=$(cd "$(dirname "$0")" && pwd)
python=${POPC_PYTHON:-/usr/bin/python3}
steps=60
mkdir -p "$work"
"$python" "$here/make_data.py" "$work" --steps $steps
"$bin/popc-onnx" "$work/model.onnx" -o "$work/train.popef" --train --loss loss \
  --optimizer adam --learning-rate 0.02 --batches-per-step $steps
"$bin/poprun-lite" "$work/train.popef" --inputs "$work/train.npz" \
  --outputs "$work/train_out.npz" --save-model "$work/trained.onnx"
"$bin/popc-onnx" "$work/trained.onnx" -o "$work/trained.popef"
"$bin/poprun-lite" "$work/trained.popef" --inputs "$work/test.npz" --outputs "$work/test_out.npz"
"$python" - "$work" "$min_accuracy" <<'PY'
import sys
import numpy as np
work, minimum = sys.argv[1], float(sys.argv[2])
losses = np.load(f"{work}/train_out.npz")["loss"]
np.savetxt(f"{work}/losses_cli.csv", losses, fmt="%.6f")
logits = np.load(f"{work}/test_out.npz")["logits"]
accuracy = float((logits.argmax(1) == np.load(f"{work}/test.npz")["label"]).mean())
print(f"loss: first step {losses[0]:.4f}, last step {losses[-1]:.4f}; test accuracy {accuracy:.3f}")
sys.exit(0 if accuracy >= minimum and losses[-1] < losses[0] else 1)
PY
