#!/usr/bin/env bash
# A float16 export of a real model against PyTorch with float16 storage and float
# partials (float16.py), within float16 tolerance (a few ulp at the logits' scale).
# With PARTIALS=half the model compiles with --partials-type half: every partial
# sum is rounded to float16, so the tolerance is looser and the vertices must say so.
# Usage: run_float16.sh NAME BIN_DIR WORK_DIR [PARTIALS]
set -euo pipefail
name=$1 bin=$2 partials=${4:-float}
work=$3/float16_$1_$partials
here=$(cd "$(dirname "$0")" && pwd)
python=${POPC_PYTHON:-/usr/bin/python3}
mkdir -p "$work"
"$python" "$here/float16.py" "$work" "$name" >"$work/export.log" 2>&1 || { cat "$work/export.log"; exit 1; }
"$bin/popc-onnx" "$work/model.onnx" -o "$work/model.popef" --partials-type "$partials"
"$bin/popef-info" "$work/model.popef" --io | grep -q "float16" || { echo "not a float16 executable"; exit 1; }
"$bin/poprun-lite" "$work/model.popef" --inputs "$work/inputs.npz" --outputs "$work/outputs.npz"
if [ "$partials" = half ]; then
  "$bin/popef-info" "$work/model.popef" --all --json >"$work/info.json"
  grep -q '_float16[^"]*_halfPartials"' "$work/info.json" || { echo "no half-partials vertex"; exit 1; }
  "$bin/npz-compare" "$work/outputs.npz" "$work/expected.npz" --rtol 2e-2 --atol 2e-2
else
  "$bin/npz-compare" "$work/outputs.npz" "$work/expected.npz" --rtol 5e-3 --atol 5e-3
fi
