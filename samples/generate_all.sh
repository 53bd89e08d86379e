#!/bin/sh
# Regenerates every sample (model.onnx, inputs.npz, expected.npz) in place.
# Needs Debian's /usr/bin/python3 (numpy, onnx, torch); override with POPC_PYTHON.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${POPC_PYTHON:-/usr/bin/python3}
for name in mlp cnn; do
  "$python" -B "$here/generate.py" "$name" --out "$here/$name"
done
