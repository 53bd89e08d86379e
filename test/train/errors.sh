#!/usr/bin/env bash
# Bad training requests get a one-line error naming what is wrong, exit 1.
# Usage: errors.sh BIN_DIR WORK_DIR
set -uo pipefail
bin=$1
work=$2/errors
python=${POPC_PYTHON:-/usr/bin/python3}
mkdir -p "$work"
"$python" - "$work" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
out = sys.argv[1]
def model(name, nodes, outputs, inits, inputs=()):
    g = helper.make_graph(nodes, name, list(inputs), outputs, inits)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), f"{out}/{name}.onnx")
w = numpy_helper.from_array(np.ones((3, 4), np.float32), "w")
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
# y = x * w: not a scalar
model("vector_loss", [helper.make_node("Mul", ["x", "w"], ["y"])], [f("y", [3, 4])], [w], [x])
# loss = sum(x): w is unused by the loss
model("no_weights", [helper.make_node("Mul", ["x", "w"], ["y"]),
                     helper.make_node("ReduceSum", ["x"], ["loss"], keepdims=0)],
      [f("y", [3, 4]), f("loss", [])], [w], [x])
# loss = sum(hardmax(x * w)): Hardmax has no gradient rule
model("no_rule", [helper.make_node("Mul", ["x", "w"], ["y"]), helper.make_node("Hardmax", ["y"], ["c"]),
                  helper.make_node("ReduceSum", ["c"], ["loss"], keepdims=0)], [f("loss", [])], [w], [x])
PY
status=0
expect() { # expect NAME PATTERN popc-onnx ARGS...
  local name=$1 pattern=$2
  shift 2
  local err
  err=$("$@" 2>&1 >/dev/null)
  local rc=$?
  if [ $rc -ne 1 ] || ! grep -qE -- "$pattern" <<<"$err" || [ "$(wc -l <<<"$err")" -ne 1 ]; then
    echo "FAIL $name: exit $rc, stderr: $err"
    status=1
  else
    echo "ok   $name: $err"
  fi
}
p="$bin/popc-onnx"
expect vector_loss "loss 'y' is not a scalar: its shape is \[3,4\]" \
  "$p" "$work/vector_loss.onnx" -o "$work/a.popef" --train --loss y
expect no_weights "loss 'loss' does not depend on any trainable tensor" \
  "$p" "$work/no_weights.onnx" -o "$work/a.popef" --train --loss loss
expect no_rule "Hardmax '.*': no gradient rule" \
  "$p" "$work/no_rule.onnx" -o "$work/a.popef" --train --loss loss
expect unknown_loss "--loss nope: the model has no tensor of that name" \
  "$p" "$work/no_rule.onnx" -o "$work/a.popef" --train --loss nope
expect bad_builtin "--loss l2:x: unknown built-in loss 'l2'" \
  "$p" "$work/no_rule.onnx" -o "$work/a.popef" --train --loss l2:x
expect momentum_with_adam "--momentum does not apply to --optimizer adam" \
  "$p" "$work/no_rule.onnx" -o "$work/a.popef" --train --loss loss --optimizer adam --momentum 0.9
expect beta_with_sgd "--beta1 does not apply to --optimizer sgd" \
  "$p" "$work/no_rule.onnx" -o "$work/a.popef" --train --loss loss --beta1 0.5
expect loss_without_train "--loss applies to training: add --train" \
  "$p" "$work/no_rule.onnx" -o "$work/a.popef" --loss loss
expect no_loss "--train needs --loss" "$p" "$work/no_rule.onnx" -o "$work/a.popef" --train
expect not_trainable "--trainable x: not an initializer" \
  "$p" "$work/no_rule.onnx" -o "$work/a.popef" --train --loss loss --trainable x
expect pipeline_without_accumulation "--train --pipeline needs --accumulation-factor of at least 2" \
  "$p" "$work/no_rule.onnx" -o "$work/a.popef" --train --loss loss --pipeline --num-ipus 2 --batches-per-step 2
# An inference executable has no variables to save.
"$bin/popc-onnx" "$work/vector_loss.onnx" -o "$work/infer.popef" >/dev/null 2>&1
expect save_weights_inference "--save-weights .*: .* has no variables \(compile with popc-onnx --train\)" \
  "$bin/poprun-lite" "$work/infer.popef" --fill ones --save-weights "$work/w.npz"
exit $status
