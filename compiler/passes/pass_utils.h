// Small graph queries and edits shared by the passes.
#pragma once
#include "compiler/ir/ir.h"

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace popc::passes {

// True for ops of the default ONNX domain ("" or "ai.onnx").
inline bool isOnnxOp(const ir::Op &op) { return op.domain.empty() || op.domain == "ai.onnx"; }

bool isConstant(const ir::Graph &g, const std::string &name);
bool isGraphOutput(const ir::Graph &g, const std::string &name);
bool isGraphInput(const ir::Graph &g, const std::string &name);

// Tensor names referenced by ops of the subgraphs. Subgraph bodies may capture
// main-graph tensors by name, so passes must neither rename nor drop them.
std::set<std::string> namesUsedBySubgraphs(const ir::Ir &ir);

// True when `name` is read by nothing: no op input, no graph output, no subgraph.
bool isUnused(const ir::Graph &g, const std::set<std::string> &captured, const std::string &name);

// Adds a Constant tensor named after `base` (made unique) and returns its name.
std::string addConstant(ir::Graph &g, const std::string &base, ir::TensorInfo info,
                        std::vector<uint8_t> data);
// Same for float data converted to `dtype` (F32 or F64).
std::string addFloatConstant(ir::Graph &g, const std::string &base, DType dtype, Shape shape,
                             const std::vector<double> &values);

// An int64 constant of the given values (1-D, or a scalar when `scalar`).
std::string addInt64Constant(ir::Graph &g, const std::string &base, const std::vector<int64_t> &values,
                             bool scalar = false);

// An int64 constant of any shape (row-major values).
std::string addInt64Tensor(ir::Graph &g, const std::string &base, Shape shape, const std::vector<int64_t> &values);

// Constant data as doubles (float and integer dtypes; throws for F16).
std::vector<double> constantAsDoubles(const ir::Tensor &t);

// Removes the op at `index`, then the tensors it produced that nothing else references.
void removeOpAndDeadOutputs(ir::Graph &g, size_t index, const std::set<std::string> &captured);

// Index of `op` in g.ops() (ops are stored by unique_ptr, so the address is stable).
size_t indexOf(const ir::Graph &g, const ir::Op *op);

} // namespace popc::passes

namespace popc::passes {

// A per-channel affine map y[:,c,...] = x[:,c,...] * scale[c] + shift[c].
struct ChannelAffine {
  std::vector<double> scale, shift;
};

// The affine map of an inference BatchNormalization whose scale, B, mean and
// var are constants (float dtypes) and whose training outputs are unused;
// nullopt otherwise.
std::optional<ChannelAffine> constantBatchNormAffine(const ir::Graph &g, const ir::Op &bn,
                                                     const std::set<std::string> &captured);

// What a rewrite sees of the op it replaces: a copy of the op (already removed
// from the graph) and the TensorInfo each of its outputs had.
struct Replaced {
  ir::Op op;
  std::map<std::string, ir::TensorInfo> outputs;
  const ir::TensorInfo &output(size_t i) const { return outputs.at(op.outputs.at(i)); }
};
// The driver of a decomposition pass: for each main-graph ONNX op that
// `select` accepts, removes it (and its dead outputs) and lets `rewrite`
// insert its replacement at the same index, returning how many ops it
// inserted. Returns the number of ops replaced.
size_t replaceOps(ir::Ir &ir, const std::function<bool(const ir::Graph &, const ir::Op &)> &select,
                  const std::function<size_t(ir::Graph &, size_t index, const Replaced &)> &rewrite);

// replaceOps for every op of one type, each rewritten by `rewrite` (the graph,
// its index, the removed op, its first output's info); logs the count as `pass`.
size_t rewriteOpsOfType(ir::Ir &ir, const std::string &type, const char *pass,
                        const std::function<size_t(ir::Graph &, size_t index, const ir::Op &, const ir::TensorInfo &)> &rewrite);

// An op name not used by any op of the graph: base, base_1, base_2 ...
std::string uniqueOpName(const ir::Graph &g, const std::string &base);

// Inserts ops one after another from index `at`, named after `base` and placed
// on `ipu` (those of the op they replace), inferring each as it goes in.
class OpInserter {
public:
  OpInserter(ir::Graph &g, size_t at, std::string base, int64_t ipu)
      : g_(g), at_(at), base_(std::move(base)), ipu_(ipu) {}
  // Adds `type`(inputs) writing `output` (a fresh name when empty); returns the output.
  std::string add(const std::string &type, std::vector<std::string> inputs, std::string output = "",
                  ir::Attributes attrs = {}, std::string domain = "");
  // Adds `type`(inputs) with `outputs` fresh outputs (TopK's values and
  // indices, ...); returns their names.
  std::vector<std::string> addOutputs(const std::string &type, std::vector<std::string> inputs, size_t outputs,
                                      ir::Attributes attrs = {});
  // Reshape of x to `shape` (a constant input: opset 5 on).
  std::string reshape(const std::string &x, const Shape &shape, std::string output = "");
  // x as `to` (a Cast; ONNX's element type number from popc's DType).
  std::string cast(const std::string &x, DType to, std::string output = "");
  // Transpose of x by `perm`.
  std::string transpose(const std::string &x, const std::vector<int64_t> &perm, std::string output = "");
  // Slice of x along `axis`, [begin, end), in the graph's opset's form
  // (starts/ends/axes are inputs from opset 10, attributes before).
  std::string slice(const std::string &x, int64_t axis, int64_t begin, int64_t end, std::string output = "");
  // A reduction `type` (ReduceSum, ReduceMax, ...) of x over `axes`, in the
  // graph's opset's form (axes are an input from opset 13 for ReduceSum and 18
  // for the others, an attribute before).
  std::string reduce(const std::string &type, const std::string &x, const std::vector<int64_t> &axes, bool keepDims,
                     std::string output = "");
  size_t next() const { return at_; } // index after the last inserted op

private:
  // Inserts the op at at_ (named after base_, on ipu_), infers it; its outputs.
  const std::vector<std::string> &insert(const std::string &type, std::vector<std::string> inputs,
                                         std::vector<std::string> outputs, ir::Attributes attrs, std::string domain);

  ir::Graph &g_;
  size_t at_;
  std::string base_;
  int64_t ipu_;
};

// Integer indices as int64, a negative one counted back from `bound` (an int64
// constant broadcast against them: a dim's size, or one per index column).
std::string wrapNegativeIndices(OpInserter &ops, ir::Graph &g, const std::string &base, std::string indices,
                                const std::string &bound);

} // namespace popc::passes
