#!/usr/bin/env bash
# README command 1: install dependencies, build, then compile and run the
# bundled MLP sample end to end and compare with PyTorch's output.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
tools/build.sh
mkdir -p build/samples
build/bin/popc-onnx samples/mlp/model.onnx -o build/samples/mlp.popef
build/bin/poprun-lite build/samples/mlp.popef --inputs samples/mlp/inputs.npz \
  --outputs build/samples/mlp_out.npz --report
build/bin/npz-compare build/samples/mlp_out.npz samples/mlp/expected.npz --rtol 1e-4 --atol 1e-6
