#!/usr/bin/env bash
# Training-mode Dropouts on both stages of a pipeline read one per-micro-batch
# counter: the later stage reads a snapshot taken before each update, so the
# pipelined step draws the masks the unpipelined one does, and ends bit for
# bit where it ends.
# Usage: dropout_pipeline.sh BIN_DIR WORK_DIR
set -euo pipefail
bin=$1
work=$2/dropout_pipeline
python=${POPC_PYTHON:-/usr/bin/python3}
mkdir -p "$work"
"$python" - "$work" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
out = sys.argv[1]
rng = np.random.default_rng(3)
w = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "w")
w2 = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "w2")
def on(node, ipu):
    node.attribute.append(helper.make_attribute("__ipu_number", ipu))
    return node
nodes = [on(helper.make_node("Mul", ["x", "w"], ["a"]), 0), on(helper.make_node("Dropout", ["a"], ["b"]), 0),
         on(helper.make_node("Mul", ["b", "w2"], ["c"]), 1), on(helper.make_node("Dropout", ["c"], ["d"]), 1),
         on(helper.make_node("ReduceSum", ["d"], ["loss"], keepdims=0), 1)]
g = helper.make_graph(nodes, "dropout_stages", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])],
                      [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], [w, w2])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/model.onnx")
np.savez(f"{out}/data.npz", x=rng.standard_normal((3 * 4, 3, 4)).astype(np.float32))
PY
flags=(--train --loss loss --optimizer sgd --learning-rate 0.1 --num-ipus 2 --accumulation-factor 4)
"$bin/popc-onnx" "$work/model.onnx" -o "$work/pipelined.popef" "${flags[@]}" --pipeline
"$bin/popc-onnx" "$work/model.onnx" -o "$work/sequential.popef" "${flags[@]}"
for f in pipelined sequential; do
  "$bin/poprun-lite" "$work/$f.popef" --inputs "$work/data.npz" --iterations 3 --save-weights "$work/$f.npz" \
    --outputs "$work/${f}_loss.npz" >/dev/null
done
"$bin/npz-compare" --rtol 0 --atol 0 "$work/pipelined.npz" "$work/sequential.npz"
"$bin/npz-compare" --rtol 0 --atol 0 "$work/pipelined_loss.npz" "$work/sequential_loss.npz"
# 3 steps of 4 micro-batches each drew a new mask.
"$python" -c "import numpy as np, sys; v = int(np.load(sys.argv[1])['DropoutStep___']); sys.exit(v != 12)" \
  "$work/pipelined.npz" || { echo "DropoutStep___ is not 12"; exit 1; }
echo "dropout_pipeline: 3 pipelined steps equal the unpipelined ones bit for bit"
