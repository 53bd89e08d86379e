# docs/cli.md, poprun-lite: what each mistake prints (stderr, one line each).
cp "$SRC/samples/mlp/model.onnx" mlp.onnx
popc-onnx mlp.onnx -o mlp.popef --no-cache >/dev/null
head -c 1000 mlp.popef > trunc.popef
mkdir outdir
err() { "$@" 2>&1 >/dev/null | head -1; }
err poprun-lite mlp.popef
err poprun-lite mlp.popef --inputs "$SRC/samples/cnn/inputs.npz"
err poprun-lite mlp.onnx
err poprun-lite nothere.popef
err poprun-lite trunc.popef
err poprun-lite mlp.popef --inputs nothere.npz
err poprun-lite mlp.popef --fill zeros --outputs /nonexistent/o.npz
err poprun-lite mlp.popef --fill zeros --outputs outdir
err poprun-lite mlp.popef --input input=4x64xf32=1,2
err poprun-lite mlp.popef --iterations 0
err poprun-lite mlp.popef --frob
