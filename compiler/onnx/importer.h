// ONNX ModelProto → popc IR. Reads and validates the file (incl. external
// data), applies --input-shape overrides, runs the ONNX checker and shape
// inference, converts initializers/nodes/attributes and re-infers with the
// popc op registry. Every problem is one popc::Error line naming the file.
#pragma once
#include "compiler/ir/ir.h"

#include <map>
#include <string>
#include <vector>

namespace popc::onnx {

struct ImportOptions {
  // Fixed shapes for graph inputs (from --input-shape name=1,3,224,224);
  // they replace the model's (possibly dynamic) input shapes before inference.
  std::map<std::string, Shape> inputShapes;
  // Graph inputs whose values are fixed at compile time (from --freeze-input
  // name=file.npy): they become constants, so ops that need a compile-time
  // value there (Reshape's shape, ReduceSum's axes, TopK's k, ...) can compile.
  // The executable then no longer takes them as inputs.
  std::map<std::string, ir::Tensor> frozenInputs;
};

ir::Ir importOnnx(const std::string &path, const ImportOptions &options = {});

// Parses "name=1,3,224,224" specs (the name may itself contain '='; the last
// one splits). Throws popc::Error for malformed specs or duplicate names.
std::map<std::string, Shape> parseInputShapes(const std::vector<std::string> &specs);

} // namespace popc::onnx
