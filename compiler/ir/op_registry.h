// Op registry: for every supported op type, shape/type inference and
// verification. The ONNX importer refuses ops not registered here; passes call
// inferShapes() after rewriting. Lowerings live in compiler/lib, not here.
#pragma once
#include "compiler/ir/autodiff.h"
#include "compiler/ir/ir.h"

#include <functional>
#include <string>
#include <vector>

namespace popc::ir {

// Checks the op's inputs/attributes and returns the output TensorInfos.
// Throws popc::Error naming the op (type and name) on invalid input.
using InferFn = std::function<std::vector<TensorInfo>(const Op &, const Graph &)>;

// OpDef::maxInputs value for ops with any number of inputs (Concat).
constexpr int kVariadic = -1;

struct OpDef {
  std::string type;
  int minInputs = 1;
  int maxInputs = 1; // kVariadic = unbounded
  InferFn infer;
  // Reverse-mode gradient rule (autodiff.h); empty: the op cannot be trained through.
  GradFn grad = {};
  bool graphcore = false; // in domain ai.graphcore (PopART's own ops), not ai.onnx
};

// PopART's op domain; popc's compiler-made ops that ONNX lacks live there.
inline constexpr const char *kGraphcoreDomain = "ai.graphcore";

class OpRegistry {
public:
  static const OpRegistry &instance();
  const OpDef *find(const std::string &type) const; // nullptr if unsupported
  std::vector<std::string> types() const;            // sorted
  void add(OpDef def);

private:
  std::map<std::string, OpDef> defs_;
};

// Runs inference for `op` and creates or updates its output tensors in `graph`.
void inferAndSetOutputs(const Op &op, Graph &graph);
// Re-infers every op of the graph in order (after a pass rewrote it) and verifies.
void inferGraph(Graph &graph);
// Structural verification: every input defined before use, names unique,
// outputs exist. Throws popc::Error.
void verifyGraph(const Graph &graph);

// "Conv 'conv1'": how errors name an op.
std::string describeOp(const Op &op);

// The value of a Constant op (value / value_float(s) / value_int(s) attribute)
// as a TensorKind::Constant tensor named after the op's output.
Tensor constantOpTensor(const Op &op);
// Compile-time value of tensor `name`: a Constant tensor, or the output of a
// Constant op. nullopt when it is only known at run time.
std::optional<Tensor> constantValue(const Graph &graph, const std::string &name);

// Numpy broadcasting of two shapes; throws popc::Error with both shapes on mismatch.
Shape broadcastShapes(const Shape &a, const Shape &b);

} // namespace popc::ir
