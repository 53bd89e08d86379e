// Constant folding: evaluate on the host whatever depends only on constants,
// so the device never spends cycles (or tile memory for intermediates) on it.
// Exported models are full of such subgraphs: Shape→Gather→Concat→Reshape
// chains, weight transposes, Constant ops.
#include "compiler/passes/host_eval.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <set>

namespace popc::passes {

namespace {

bool foldable(const ir::Graph &g, const ir::Op &op) {
  if (!isOnnxOp(op) || op.outputs.empty() || !hostEvalSupports(op.type))
    return false;
  bool anyOutput = false;
  for (const auto &out : op.outputs) {
    if (!out.empty() && !g.hasTensor(out))
      return false;
    anyOutput |= !out.empty();
  }
  if (!anyOutput)
    return false;
  // Shapes are static, so Shape/Size/EyeLike fold whatever their input is.
  if (hostEvalNeedsOnlyInfo(op.type))
    return op.hasInput(0) && g.hasTensor(op.inputs[0]);
  uint64_t inBytes = 0, outBytes = 0;
  for (const auto &in : op.inputs) {
    if (!in.empty() && !(g.hasTensor(in) && g.tensor(in).kind == ir::TensorKind::Constant))
      return false;
    inBytes += in.empty() ? 0 : g.tensor(in).info.bytes();
  }
  for (const auto &out : op.outputs)
    outBytes += out.empty() ? 0 : g.tensor(out).info.bytes();
  // A broadcast of a small constant into a big one stays on the device (copies
  // from the small constant) rather than bloating the executable.
  static const std::set<std::string> expanding = {"Expand", "Tile", "Pad", "Resize", "Upsample"};
  if (expanding.count(op.type) && outBytes > (uint64_t(1) << 20) && outBytes > 2 * inBytes)
    return false;
  return true;
}

} // namespace

size_t foldConstants(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  size_t folded = 0;
  // One forward sweep folds whole chains: ops are in topological order, so a
  // folded output is already Constant when its consumers are visited.
  for (size_t i = 0; i < g.ops().size();) {
    const ir::Op &op = *g.ops()[i];
    if (!foldable(g, op)) {
      ++i;
      continue;
    }
    std::vector<const ir::Tensor *> inputs;
    for (const auto &in : op.inputs)
      inputs.push_back(in.empty() ? nullptr : &g.tensor(in));
    std::vector<ir::TensorInfo> infos;
    for (const auto &out : op.outputs)
      infos.push_back(out.empty() ? ir::TensorInfo{} : g.tensor(out).info);
    auto result = hostEvaluate(op, g, inputs, infos);
    if (!result) {
      ++i;
      continue;
    }
    for (size_t k = 0; k < op.outputs.size(); ++k) {
      if (op.outputs[k].empty())
        continue;
      log::get("passes")->trace("constant folding: {} ({}) -> {}", op.name, op.type, op.outputs[k]);
      ir::Tensor &out = g.tensor(op.outputs[k]);
      out.kind = ir::TensorKind::Constant;
      out.data = std::move((*result)[k]);
    }
    g.removeOp(i);
    ++folded;
  }
  return folded;
}

} // namespace popc::passes
