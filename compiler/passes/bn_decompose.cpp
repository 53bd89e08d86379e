// BatchNormalization decomposition: at inference BN is a per-channel affine
// map, so it becomes Mul + Add by folded constants and reuses the elementwise
// lowerings instead of needing its own. Runs after Conv+BN folding, so only
// BNs that could not be merged into a Conv reach it.
#include "compiler/ir/op_registry.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

size_t decomposeBatchNorm(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t count = 0;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const ir::Op &bn = *g.ops()[i];
    if (bn.type != "BatchNormalization" || !bn.hasInput(0) || !g.hasTensor(bn.inputs[0]))
      continue;
    const ir::TensorInfo x = g.tensor(bn.inputs[0]).info;
    if ((x.dtype != DType::F32 && x.dtype != DType::F64) || x.shape.size() < 2)
      continue;
    auto affine = constantBatchNormAffine(g, bn, captured);
    if (!affine || int64_t(affine->scale.size()) != x.shape[1])
      continue;
    // [C,1,...,1] broadcasts against [N,C,d1,...] along the channel axis.
    Shape cshape(x.shape.size() - 1, 1);
    cshape[0] = x.shape[1];
    std::string in = bn.inputs[0], out = bn.outputs[0], name = bn.name;
    int64_t ipu = bn.ipu;
    std::string scale = addFloatConstant(g, name + "_scale", x.dtype, cshape, affine->scale);
    std::string shift = addFloatConstant(g, name + "_shift", x.dtype, cshape, affine->shift);
    removeOpAndDeadOutputs(g, i, captured);

    ir::Op mul;
    mul.type = "Mul";
    mul.name = uniqueOpName(g, name + "_mul");
    mul.inputs = {in, scale};
    mul.outputs = {g.uniqueName(out + "_scaled")};
    ir::Op add;
    add.type = "Add";
    add.name = uniqueOpName(g, name + "_add");
    add.inputs = {mul.outputs[0], shift};
    add.outputs = {out};
    mul.ipu = add.ipu = ipu;
    ir::inferAndSetOutputs(g.insertOpBefore(i, std::move(mul)), g);
    ir::inferAndSetOutputs(g.insertOpBefore(i + 1, std::move(add)), g);
    ++i; // skip the Add just inserted
    log::get("passes")->trace("batchnorm decomposition: {}", name);
    ++count;
  }
  return count;
}

} // namespace popc::passes
