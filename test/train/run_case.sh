#!/usr/bin/env bash
# One training case against torch.optim: make_case.py (PyTorch model, K-step
# dataset, weights after K steps) -> popc-onnx --train -> poprun-lite
# --iterations K --save-weights -> npz-compare of every trained weight and of
# the last step's loss.
# Usage: run_case.sh CASE BIN_DIR WORK_DIR
set -euo pipefail
case=$1
bin=$2
work=$3/$case
here=$(cd "$(dirname "$0")" && pwd)
python=${POPC_PYTHON:-/usr/bin/python3}
steps=10
mkdir -p "$work"
"$python" "$here/make_case.py" "$work" "$case" --steps $steps >"$work/make.log" 2>&1 || {
  cat "$work/make.log"
  exit 1
}
# shellcheck disable=SC2046 # flags.txt holds the case's popc-onnx flags
"$bin/popc-onnx" "$work/model.onnx" -o "$work/train.popef" $(cat "$work/flags.txt")
"$bin/poprun-lite" "$work/train.popef" --inputs "$work/data.npz" --iterations $steps \
  --save-weights "$work/weights.npz" --save-model "$work/trained.onnx" --outputs "$work/outputs.npz"
# Weights within 1e-4 of their scale after K steps (float16 cases: tolerance.txt);
# the loss of the last step.
tolerance="--rtol 1e-4 --atol 1e-5"
[ -f "$work/tolerance.txt" ] && tolerance=$(cat "$work/tolerance.txt")
# shellcheck disable=SC2086 # two flags
"$bin/npz-compare" --subset $tolerance "$work/weights.npz" "$work/expected_weights.npz"
# shellcheck disable=SC2086
"$bin/npz-compare" --subset $tolerance "$work/outputs.npz" "$work/expected_loss.npz"
# The trained model holds exactly the saved weights, and is a valid ONNX model.
"$python" - "$work" <<'PY'
import sys
import numpy as np
import onnx
from onnx import numpy_helper
work = sys.argv[1]
model = onnx.load(f"{work}/trained.onnx")
onnx.checker.check_model(model)
saved = np.load(f"{work}/weights.npz")
trained = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
for name in np.load(f"{work}/expected_weights.npz").files:
    assert np.array_equal(trained[name], saved[name]), name
PY
# Stopping after half the steps and resuming from the saved weights and
# optimizer state (another process) ends where never stopping does.
half=$((steps / 2))
"$bin/poprun-lite" "$work/train.popef" --inputs "$work/data_a.npz" --iterations $half \
  --save-weights "$work/half.npz" --outputs "$work/half_out.npz" >/dev/null
"$bin/poprun-lite" "$work/train.popef" --inputs "$work/data_b.npz" --iterations $((steps - half)) \
  --load-weights "$work/half.npz" --save-weights "$work/resumed.npz" --outputs "$work/resumed_out.npz" >/dev/null
"$bin/npz-compare" --rtol 0 --atol 0 "$work/resumed.npz" "$work/weights.npz" >/dev/null
# A pipelined case ends exactly where the same shards without pipelining do:
# the pipeline reorders the micro-batches' work, not their arithmetic.
if grep -q -- "--pipeline" "$work/flags.txt"; then
  # shellcheck disable=SC2046
  "$bin/popc-onnx" "$work/model.onnx" -o "$work/sequential.popef" $(sed 's/ --pipeline//' "$work/flags.txt")
  "$bin/poprun-lite" "$work/sequential.popef" --inputs "$work/data.npz" --iterations $steps \
    --save-weights "$work/sequential.npz" --outputs "$work/sequential_out.npz" >/dev/null
  "$bin/npz-compare" --rtol 0 --atol 0 "$work/weights.npz" "$work/sequential.npz" >/dev/null
  "$bin/npz-compare" --rtol 0 --atol 0 "$work/outputs.npz" "$work/sequential_out.npz" >/dev/null
fi
echo "training: $case: $steps steps match torch.optim"
