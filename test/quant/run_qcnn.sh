#!/usr/bin/env bash
# A quantized CNN in QDQ and operator (QLinearConv/QLinearMatMul) formats against
# numpy: the operator model exactly (integer arithmetic), the QDQ model to one
# output step, and the QDQ model within the quantization error of its float twin.
# Usage: run_qcnn.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
python=${POPC_PYTHON:-/usr/bin/python3}
mkdir -p "$work" && cd "$work"
"$python" "$(dirname "$0")/make_qcnn.py" . >make.log
for m in float qdq qop; do
  "$bin/popc-onnx" $m.onnx -o $m.popef
  "$bin/poprun-lite" $m.popef --inputs inputs.npz --outputs out_$m.npz >/dev/null
done
"$bin/npz-compare" out_float.npz expected_float.npz --rtol 1e-5 --atol 1e-5
"$bin/npz-compare" out_qop.npz expected_qop.npz --rtol 0 --atol 0   # uint8: exact
"$bin/npz-compare" out_qdq.npz expected_qdq.npz --rtol 0 --atol 0.05 # one step of the output scale
"$bin/npz-compare" out_qdq.npz expected_float.npz --rtol 0 --atol 0.2 # 4 steps: the quantization error
