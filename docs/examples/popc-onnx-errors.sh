# docs/cli.md, popc-onnx: what each mistake prints (stderr, one line each).
/usr/bin/python3 - <<'PY'
import onnx
from onnx import helper, TensorProto as T
def save(nodes, name, inputs, outputs, opsets=(("", 17),)):
    g = helper.make_graph(nodes, "g", inputs, outputs)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets]), name)
x = helper.make_tensor_value_info("x", T.FLOAT, [2])
save([helper.make_node("FusedMatMul", ["x"], ["y"], name="mm", domain="com.microsoft")], "ort.onnx", [x],
     [helper.make_tensor_value_info("y", T.FLOAT, [2])], (("", 17), ("com.microsoft", 1)))
save([helper.make_node("Unique", ["x"], ["u"], name="u1"), helper.make_node("NonZero", ["u"], ["y"], name="nz")],
     "unsup.onnx", [x], [helper.make_tensor_value_info("y", T.INT64, None)])
save([helper.make_node("Relu", ["x"], ["y"], name="r")], "dyn.onnx",
     [helper.make_tensor_value_info("x", T.FLOAT, ["batch", 4])], [helper.make_tensor_value_info("y", T.FLOAT, ["batch", 4])])
save([helper.make_node("TopK", ["x", "k"], ["v", "i"], name="TopK_0")], "topk.onnx",
     [helper.make_tensor_value_info("x", T.FLOAT, [8]), helper.make_tensor_value_info("k", T.INT64, [1])],
     [helper.make_tensor_value_info("v", T.FLOAT, None), helper.make_tensor_value_info("i", T.INT64, None)])
PY
printf 'hello, this is not a protobuf\n' > bad.onnx
head -c 300 "$SRC/samples/mlp/model.onnx" > half.onnx
mkdir models
cp "$SRC/samples/mlp/model.onnx" mlp.onnx
err() { "$@" 2>&1 >/dev/null | head -1; }
err popc-onnx bad.onnx -o x.popef
err popc-onnx half.onnx -o x.popef
err popc-onnx models -o x.popef
err popc-onnx ort.onnx -o x.popef
err popc-onnx unsup.onnx -o x.popef
err popc-onnx dyn.onnx -o x.popef
err popc-onnx mlp.onnx --input-shape foo=1,2 -o x.popef
err popc-onnx topk.onnx -o x.popef
err popc-onnx mlp.onnx --input-shape input=1,x -o x.popef
err popc-onnx mlp.onnx --input-shape input=4,64 --input-shape input=4,64 -o x.popef
err popc-onnx mlp.onnx --tiles-per-ipu 5000 -o x.popef
err popc-onnx mlp.onnx --bytes-per-tile 10 -o x.popef
err popc-onnx mlp.onnx --num-ipus 0 -o x.popef
err popc-onnx mlp.onnx -o /nonexistent/x.popef --no-cache
err popc-onnx mlp.onnx -o x.popef --log-level loud
