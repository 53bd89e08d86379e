// Float16 compute promotion. The IPU keeps float16 tensors in float16 but
// accumulates matmuls, convolutions, pools, reductions and normalisations in
// float32 partials (PopART's default partialsTypeMatMuls and convolution
// partialsType "float"). popc's kernels for those ops are float32, so an op
// of that kind with float16 inputs becomes Cast(float16 -> float32) of those
// inputs, the op in float32, and Cast(float32 -> float16) of its result.
// Elementwise ops stay float16. A constant's cast folds at compile time, so
// such weights are held as float32 on the tiles (docs/architecture.md).
// With half partials (--partials-type half) a float16 MatMul, Gemm or 2-D
// Conv stays float16: its vertices accumulate in float16.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <algorithm>
#include <set>

namespace popc::passes {

namespace {

const std::set<std::string> &accumulatingOps() {
  static const std::set<std::string> ops{
      "MatMul", "Gemm", "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool",
      "LpPool", "BatchNormalization", "InstanceNormalization", "LayerNormalization", "GroupNormalization",
      "MeanVarianceNormalization", "LRN", "Softmax", "LogSoftmax", "Hardmax", "ReduceSum", "ReduceMean", "ReduceMax",
      "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare",
      "CumSum", "Einsum"};
  return ops;
}

bool isHalf(const ir::Graph &g, const std::string &name) {
  return !name.empty() && g.hasTensor(name) && g.tensor(name).info.dtype == DType::F16;
}

// An op the vertices run in float16 with half partials: every input float16.
bool halfPartialsOp(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "MatMul" && op.type != "Gemm" && op.type != "Conv")
    return false;
  for (const std::string &in : op.inputs)
    if (!in.empty() && !isHalf(g, in))
      return false;
  return op.type != "Conv" || g.tensor(op.inputs[0]).info.shape.size() == 4;
}

} // namespace

size_t promoteFloat16(ir::Ir &ir) {
  auto select = [half = ir.halfPartials](const ir::Graph &g, const ir::Op &op) {
    if (!accumulatingOps().count(op.type) || (half && halfPartialsOp(g, op)))
      return false;
    bool anyHalf = false;
    for (const std::string &in : op.inputs)
      anyHalf |= isHalf(g, in);
    // Every output present: each gets its own cast back (MaxPool's Indices,
    // BN's training statistics, LayerNorm's Mean are copied as they are).
    const bool allOutputs = !op.outputs.empty() &&
                            std::none_of(op.outputs.begin(), op.outputs.end(), [](const std::string &o) { return o.empty(); });
    return anyHalf && allOutputs;
  };
  const size_t count = replaceOps(ir, select, [](ir::Graph &g, size_t i, const Replaced &r) {
    const ir::Op &op = r.op;
    OpInserter ops(g, i, op.name, op.ipu);
    std::vector<std::string> inputs = op.inputs;
    for (std::string &in : inputs)
      if (isHalf(g, in))
        in = ops.cast(in, DType::F32);
    if (op.outputs.size() == 1) {
      if (r.output(0).dtype == DType::F16)
        ops.cast(ops.add(op.type, inputs, "", op.attrs, op.domain), DType::F16, op.outputs[0]);
      else
        ops.add(op.type, inputs, op.outputs[0], op.attrs, op.domain);
      return ops.next() - i;
    }
    const std::vector<std::string> results = ops.addOutputs(op.type, inputs, op.outputs.size(), op.attrs);
    for (size_t k = 0; k < results.size(); ++k)
      if (r.output(k).dtype == DType::F16)
        ops.cast(results[k], DType::F16, op.outputs[k]);
      else
        ops.add("Identity", {results[k]}, op.outputs[k]);
    return ops.next() - i;
  });
  if (count)
    log::get("passes")->debug("float16-promotion: {} ops accumulate in float32", count);
  return count;
}

} // namespace popc::passes
