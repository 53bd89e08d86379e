// Float16 compute promotion. The IPU keeps float16 tensors in float16 but
// accumulates matmuls, convolutions, pools, reductions and normalisations in
// float32 partials (PopART's default partialsTypeMatMuls and convolution
// partialsType "float"). popc's kernels for those ops are float32, so an op
// of that kind with float16 inputs becomes Cast(float16 -> float32) of those
// inputs, the op in float32, and Cast(float32 -> float16) of its result.
// Elementwise ops stay float16. A constant's cast folds at compile time, so
// such weights are held as float32 on the tiles (docs/architecture.md).
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <set>

namespace popc::passes {

namespace {

// ONNX TensorProto data types of Cast's `to`.
constexpr int64_t kOnnxFloat = 1, kOnnxFloat16 = 10;

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

} // namespace

size_t promoteFloat16(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  const std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t count = 0;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const ir::Op &candidate = *g.ops()[i];
    if (!isOnnxOp(candidate) || !accumulatingOps().count(candidate.type))
      continue;
    bool anyHalf = false;
    for (const std::string &in : candidate.inputs)
      anyHalf |= isHalf(g, in);
    // One result only: the extra outputs (MaxPool's Indices, BN's training
    // statistics, LayerNorm's Mean) would each need their own cast back.
    size_t results = 0;
    for (const std::string &out : candidate.outputs)
      results += !out.empty();
    if (!anyHalf || results != 1 || candidate.outputs[0].empty())
      continue;
    const ir::Op op = candidate;
    const bool halfResult = isHalf(g, op.outputs[0]);
    std::vector<std::string> inputs = op.inputs;
    std::vector<bool> widen(inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k)
      widen[k] = isHalf(g, inputs[k]);
    removeOpAndDeadOutputs(g, i, captured);
    OpInserter ops(g, i, op.name, op.ipu);
    ir::Attributes toFloat, toHalf;
    toFloat.set("to", kOnnxFloat);
    toHalf.set("to", kOnnxFloat16);
    for (size_t k = 0; k < inputs.size(); ++k)
      if (widen[k])
        inputs[k] = ops.add("Cast", {inputs[k]}, "", toFloat);
    if (halfResult)
      ops.add("Cast", {ops.add(op.type, inputs, "", op.attrs, op.domain)}, op.outputs[0], toHalf);
    else
      ops.add(op.type, inputs, op.outputs[0], op.attrs, op.domain);
    i = ops.next() - 1;
    ++count;
  }
  if (count)
    log::get("passes")->debug("float16-promotion: {} ops accumulate in float32", count);
  return count;
}

} // namespace popc::passes
