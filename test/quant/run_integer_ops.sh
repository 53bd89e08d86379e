#!/usr/bin/env bash
# MatMulInteger/ConvInteger on the int8 vertices against numpy's integer
# arithmetic, exactly; each model must compile its products onto int32 vertices.
# Usage: run_integer_ops.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
python=${POPC_PYTHON:-/usr/bin/python3}
mkdir -p "$work" && cd "$work"
"$python" "$(dirname "$0")/make_integer_ops.py" .
for onnx in *.onnx; do
  m=${onnx%.onnx}
  "$bin/popc-onnx" "$onnx" -o "$m.popef" --no-cache
  "$bin/popef-info" "$m.popef" --all --json >"$m.json"
  if ! grep -Eq '"(MatMul|Conv)_[^"]*_int32_u?int8z' "$m.json"; then
    echo "$m: no integer MatMul/Conv vertex in $m.popef" >&2
    exit 1
  fi
  "$bin/poprun-lite" "$m.popef" --inputs "${m}_inputs.npz" --outputs "${m}_out.npz" >/dev/null
  "$bin/npz-compare" "${m}_out.npz" "${m}_expected.npz" --rtol 0 --atol 0
done
