# docs/cli.md, popc-onnx: the out-of-memory report (the CNN sample on 4 tiles of 4 KiB).
out=$PWD
cd "$SRC" || exit 1
echo '$ popc-onnx samples/cnn/model.onnx -o x.popef --tiles-per-ipu 4 --bytes-per-tile 4096'
popc-onnx samples/cnn/model.onnx -o "$out/x.popef" --tiles-per-ipu 4 --bytes-per-tile 4096 --no-cache 2>&1 >/dev/null | head -3
echo '  ...'
