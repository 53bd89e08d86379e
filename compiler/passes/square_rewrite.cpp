// Pow(x, 2) as Mul(x, x). LayerNorm's variance as torch exports it squares
// with Pow, which a vertex computes with a pow call per element (a
// transcendental on the IPU too); x * x is the correctly rounded square, as
// a correctly rounded pow would give. Only a floating-point x and a constant
// exponent of one element equal to 2 (of any numeric type).
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

namespace {

bool isConstantTwo(const ir::Graph &g, const std::string &name) {
  if (!isConstant(g, name))
    return false;
  const ir::Tensor &t = g.tensor(name);
  if (t.info.elements() != 1)
    return false;
  const std::vector<double> v = t.toDoubles();
  return v.size() == 1 && v[0] == 2.0;
}

} // namespace

size_t rewriteSquares(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  size_t rewritten = 0;
  for (const auto &p : g.ops()) {
    ir::Op &op = *p;
    if (!isOnnxOp(op) || op.type != "Pow" || op.inputs.size() != 2 || op.outputs.size() != 1 ||
        !g.hasTensor(op.inputs[0]) || !g.hasTensor(op.outputs[0]))
      continue;
    const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
    if (!isFloatingPoint(x.dtype) || g.tensor(op.outputs[0]).info != x || !isConstantTwo(g, op.inputs[1]))
      continue;
    op.type = "Mul";
    op.inputs[1] = op.inputs[0];
    ++rewritten;
  }
  if (rewritten)
    log::get("passes")->debug("square-rewrite: {} Pow(x, 2) as Mul(x, x)", rewritten);
  return rewritten;
}

} // namespace popc::passes
