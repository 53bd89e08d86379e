// Bounds on what a hostile model can make the importer do (support/limits.h):
// how deep its subgraphs nest, how far If/Loop/function expansion may grow it,
// and how large a tensor it may declare against --max-memory.
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"
#include "support/limits.h"

namespace popc::onnx::detail {

namespace {
void checkGraphDepth(const ::onnx::GraphProto &g, int depth, const std::string &where, const std::string &path) {
  if (depth > limits::kMaxSubgraphDepth)
    fail("{}: {}: subgraphs (If/Loop/Scan bodies) nested deeper than {} levels; fix: flatten the model", path,
         where, limits::kMaxSubgraphDepth);
  for (const auto &node : g.node())
    for (const auto &a : node.attribute()) {
      std::string inner = fmt::format("{} > node '{}' ({}) attribute '{}'", where, node.name(), node.op_type(), a.name());
      if (a.has_g())
        checkGraphDepth(a.g(), depth + 1, inner, path);
      for (const auto &sub : a.graphs())
        checkGraphDepth(sub, depth + 1, inner, path);
    }
}
} // namespace

void checkSubgraphDepth(const ::onnx::ModelProto &model, const std::string &path) {
  checkGraphDepth(model.graph(), 0, "graph", path);
  for (const auto &f : model.functions())
    for (const auto &node : f.node())
      for (const auto &a : node.attribute())
        if (a.has_g())
          checkGraphDepth(a.g(), 1, fmt::format("function '{}'", f.name()), path);
}

void checkExpandedSize(int64_t nodes, const std::string &what, const std::string &path) {
  if (nodes > limits::kMaxExpandedNodes)
    fail("{}: {} would grow the graph to {} nodes, more than the limit of {}; fix: simplify the model "
         "(fewer or shorter unrolled loops)",
         path, what, nodes, limits::kMaxExpandedNodes);
}

void checkDeclaredSizes(const ir::Graph &g, const std::string &path) {
  const uint64_t budget = limits::memoryBudget();
  if (!budget)
    return;
  for (const auto &[name, t] : g.tensors()) {
    uint64_t bytes = dtypeSize(t.info.dtype);
    bool over = false;
    for (int64_t d : t.info.shape) {
      if (d < 0)
        break; // not static yet; inference or --input-shape reports it
      if (d != 0 && bytes > budget / uint64_t(d))
        over = true;
      bytes = over ? bytes : bytes * uint64_t(d);
    }
    if (over || bytes > budget)
      fail("{}: tensor '{}' {} {} declares more than --max-memory {} bytes; fix: check the model's shapes "
           "(--input-shape) or raise --max-memory if the model is trusted",
           path, name, dtypeName(t.info.dtype), shapeToString(t.info.shape), budget);
  }
}

} // namespace popc::onnx::detail
