#!/usr/bin/env bash
# Benchmarks popc (compile time, poprun-lite per-inference time, simulated IPU cycles)
# against PyTorch-CPU and ONNX Runtime. See bench/README.md.
#   bench/run.sh [MODEL.onnx[:INPUTS.npz] ...] [--threads N] [--bin-dir DIR] [--json FILE]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# ONNX Runtime comes from npm (optional: without it the ORT column reads n/a).
if [[ ! -d "$here/node_modules/onnxruntime-node" && -z "${POPC_BENCH_NO_NPM:-}" ]] && command -v npm >/dev/null; then
  (cd "$here" && npm install --ignore-scripts --no-audit --no-fund >&2) ||
    echo "bench: npm install failed; ORT will be n/a" >&2
fi
exec /usr/bin/python3 "$here/bench.py" "$@"
