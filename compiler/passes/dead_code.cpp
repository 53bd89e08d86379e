// Dead code elimination: ops whose results never reach a graph output (often
// left behind by the other passes: folded weights, Shape chains, unused BN
// statistics) and tensors nobody references would still cost tile memory.
// Graph inputs stay: they are the executable's interface even when unused.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

size_t eliminateDeadCode(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  // Subgraph bodies may read main-graph tensors by name: those are live too.
  std::set<std::string> live = namesUsedBySubgraphs(ir);
  live.insert(g.outputs.begin(), g.outputs.end());
  for (const auto &u : g.updates) {
    live.insert(u.variable);
    live.insert(u.value);
  }

  // Backwards over the topological order: an op is live if any output is.
  auto &ops = g.ops();
  std::vector<bool> keep(ops.size(), false);
  for (size_t i = ops.size(); i-- > 0;) {
    const ir::Op &op = *ops[i];
    for (const auto &o : op.outputs)
      if (!o.empty() && live.count(o))
        keep[i] = true;
    if (keep[i])
      for (const auto &in : op.inputs)
        if (!in.empty())
          live.insert(in);
  }
  size_t removed = 0;
  for (size_t i = ops.size(); i-- > 0;)
    if (!keep[i]) {
      log::get("passes")->trace("dead code: {} ({})", ops[i]->name, ops[i]->type);
      g.removeOp(i);
      ++removed;
    }

  // Tensors: drop every non-input tensor no live op or output references.
  std::set<std::string> referenced(g.inputs.begin(), g.inputs.end());
  referenced.insert(live.begin(), live.end());
  for (const auto &op : g.ops())
    for (const auto &o : op->outputs)
      referenced.insert(o);
  std::vector<std::string> dead;
  for (const auto &[name, t] : g.tensors())
    if (!referenced.count(name))
      dead.push_back(name);
  for (const auto &name : dead)
    g.removeTensor(name);
  return removed + dead.size();
}

} // namespace popc::passes
