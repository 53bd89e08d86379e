# docs/architecture.md: the IR pass pipeline, as compiler/passes/pass_manager.cpp declares it.
echo '$ popc-onnx --list-passes'
popc-onnx --list-passes
