# docs/cli.md, popef-info: the default page for the MLP sample.
popc-onnx "$SRC/samples/mlp/model.onnx" -o mlp.popef --no-cache >/dev/null
echo '$ popef-info mlp.popef'
popef-info mlp.popef
