#!/usr/bin/env bash
# Side-by-side popc (poprun-lite) vs ONNX Runtime vs PyTorch on the bench set: steady-state
# ms, warm/cold start, compile time, sizes, peak RSS, ratios. See bench/README.md.
#   bench/compare.sh [--smoke] [--models a,b,...] [--threads N] [--json FILE] [--bin-dir DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/ort_install.sh"
ensure_onnxruntime "$here"
exec /usr/bin/python3 "$here/compare.py" "$@"
