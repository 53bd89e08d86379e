// ONNX ModelProto → popc IR. Reads and validates the file (incl. external
// data), applies --input-shape overrides, runs the ONNX checker and shape
// inference, converts initializers/nodes/attributes and re-infers with the
// popc op registry. Every problem is one popc::Error line naming the file.
#pragma once
#include "compiler/ir/ir.h"

#include <map>
#include <set>
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
  // Sequence graph inputs and their lengths (--sequence-input name=N): a
  // sequence input `x` of N tensors becomes the tensor inputs x.0 ... x.N-1
  // (shapes as usual: from the model or --input-shape x.0=...). A sequence
  // output `y` becomes the outputs y.0, y.1, ... (see compiler/onnx/README.md).
  std::map<std::string, int64_t> sequenceLengths;
  // Optional graph inputs that are absent (--optional-absent name); any other
  // optional input is present: an ordinary tensor (or sequence) input.
  std::set<std::string> absentOptionals;
  // Import once in a forked child first (support/child_guard.h): Debian's
  // libonnx 1.12 shape inference and checker crash on some malformed models,
  // which then fail with one line instead of a crash. Off only where crashes
  // are wanted (the fuzz target) or the process is already isolated.
  bool checkInChild = true;
};

ir::Ir importOnnx(const std::string &path, const ImportOptions &options = {});

// Parses "name=1,3,224,224" specs (the name may itself contain '='; the last
// one splits). Throws popc::Error for malformed specs or duplicate names.
std::map<std::string, Shape> parseInputShapes(const std::vector<std::string> &specs);

// Parses "name=N" specs of --sequence-input (N >= 0; the last '=' splits).
std::map<std::string, int64_t> parseSequenceLengths(const std::vector<std::string> &specs);

// The name of element `index` of sequence graph input/output `name`: "name.index".
std::string sequenceElementName(const std::string &name, size_t index);

} // namespace popc::onnx
