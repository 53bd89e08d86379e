#!/usr/bin/env bash
# A quantized CNN in QDQ and operator (QLinearConv/QLinearMatMul) formats against
# numpy: the operator model exactly (integer arithmetic), the QDQ model to one
# output step, and the QDQ model within the quantization error of its float twin.
# The QDQ model in ORT's layout is fused into QLinear ops (int8 vertices): exactly the
# operator model's integers, dequantized.
# Usage: run_qcnn.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1 work=$2
python=${POPC_PYTHON:-/usr/bin/python3}
mkdir -p "$work" && cd "$work"
"$python" "$(dirname "$0")/make_qcnn.py" . >make.log
for m in float qdq qop qdq_ort; do
  "$bin/popc-onnx" $m.onnx -o $m.popef
  "$bin/poprun-lite" $m.popef --inputs inputs.npz --outputs out_$m.npz >/dev/null
done
"$bin/npz-compare" out_float.npz expected_float.npz --rtol 1e-5 --atol 1e-5
"$bin/npz-compare" out_qop.npz expected_qop.npz --rtol 0 --atol 0   # uint8: exact
"$bin/npz-compare" out_qdq.npz expected_qdq.npz --rtol 0 --atol 0.05 # one step of the output scale
"$bin/npz-compare" out_qdq.npz expected_float.npz --rtol 0 --atol 0.2 # 4 steps: the quantization error
"$bin/npz-compare" out_qdq_ort.npz expected_qdq_ort.npz --rtol 0 --atol 0 # fused: the integers exactly
"$bin/popef-info" qdq_ort.popef --all --json >qdq_ort.json
grep -q '"Conv_[^"]*_int32_uint8z' qdq_ort.json || { echo "qdq_ort.onnx: QDQ not fused onto int8 vertices"; exit 1; }
