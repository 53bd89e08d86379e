#!/usr/bin/env bash
# The C++ API against the CLIs (api_parity.cpp): same executable, same cache,
# same weights after K steps.
# Usage: api_parity.sh BIN_DIR WORK_DIR API_PARITY_EXE
set -euo pipefail
bin=$1
work=$2
exe=$3
here=$(cd "$(dirname "$0")" && pwd)
python=${POPC_PYTHON:-/usr/bin/python3}
steps=4
rm -rf "$work"
mkdir -p "$work"
"$python" "$here/make_case.py" "$work" mlp_sgd --steps $steps >/dev/null
"$bin/popc-onnx" "$work/model.onnx" -o "$work/train.popef" --train --loss loss --optimizer sgd \
  --learning-rate 0.1 --cache-dir "$work/cache"
"$bin/poprun-lite" "$work/train.popef" --inputs "$work/data.npz" --iterations $steps \
  --save-weights "$work/cli_weights.npz" >/dev/null
POPC_LOG_LEVEL=info "$exe" "$work" $steps 2>"$work/api.log"
[ "$(grep -c "cache miss" "$work/api.log")" = 1 ] && [ "$(grep -c "cache hit" "$work/api.log")" = 1 ] || {
  cat "$work/api.log"
  echo "api_parity: want one compile (a cache miss), then one cache hit, from the API"
  exit 1
}
