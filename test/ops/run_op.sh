#!/usr/bin/env bash
# One op script (NAME.py writes model.onnx, inputs.npz and PyTorch's expected.npz)
# compiled, run and compared within float32 tolerance (or the script's tolerance.txt).
# Usage: run_op.sh NAME BIN_DIR WORK_DIR
set -euo pipefail
name=$1 bin=$2 work=$3/$1
python=${POPC_PYTHON:-/usr/bin/python3}
mkdir -p "$work"
"$python" "$(dirname "$0")/$name.py" "$work" >"$work/make.log" 2>&1 || { cat "$work/make.log"; exit 1; }
"$bin/popc-onnx" "$work/model.onnx" -o "$work/model.popef" --no-cache
"$bin/poprun-lite" "$work/model.popef" --inputs "$work/inputs.npz" --outputs "$work/outputs.npz" >/dev/null
# A script may write its own tolerance (npz-compare options) into tolerance.txt:
# e.g. long float sums whose order of addition differs from the reference's.
tolerance="--rtol 1e-4 --atol 1e-5"
[ -f "$work/tolerance.txt" ] && tolerance=$(cat "$work/tolerance.txt")
# shellcheck disable=SC2086
"$bin/npz-compare" "$work/outputs.npz" "$work/expected.npz" $tolerance
