#!/usr/bin/env bash
# Benchmarks popc (compile time, poprun-lite per-inference time, simulated IPU cycles)
# against PyTorch-CPU and ONNX Runtime. See bench/README.md.
#   bench/run.sh [MODEL.onnx[:INPUTS.npz] ...] [--threads N] [--bin-dir DIR] [--json FILE]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/ort_install.sh"
ensure_onnxruntime "$here"
exec /usr/bin/python3 "$here/bench.py" "$@"
