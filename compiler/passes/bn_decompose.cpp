// BatchNormalization decomposition: at inference BN is a per-channel affine
// map, so it becomes Mul + Add by folded constants and reuses the elementwise
// lowerings instead of needing its own. Runs after Conv+BN folding, so only
// BNs that could not be merged into a Conv reach it.
#include "compiler/ir/op_registry.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <algorithm>
#include <cstring>

namespace popc::passes {

namespace {

// Training-mode BatchNormalization (opset 14+) on batch statistics:
//   mean = ReduceMean(X), var = ReduceMean((X - mean)^2) over all but the channel axis,
//   Y = (X - mean) / sqrt(var + epsilon) * scale + B,
//   running_mean = input_mean * momentum + mean * (1 - momentum), likewise running_var
// (population variance, as the ONNX reference). Replaces the op at `index`;
// returns how many ops now stand in its place.
size_t decomposeTrainingBatchNorm(ir::Graph &g, size_t index, const std::set<std::string> &captured) {
  const ir::Op bn = *g.ops()[index];
  const ir::TensorInfo x = g.tensor(bn.inputs[0]).info;
  const int64_t C = x.shape[1];
  std::vector<int64_t> axes{0};
  for (int64_t d = 2; d < int64_t(x.shape.size()); ++d)
    axes.push_back(d);
  Shape cshape(x.shape.size() - 1, 1);
  cshape[0] = C;
  const double eps = bn.attrs.getFloat("epsilon", 1e-5), momentum = bn.attrs.getFloat("momentum", 0.9);
  const std::vector<std::string> outputs = bn.outputs;
  removeOpAndDeadOutputs(g, index, captured);
  OpInserter ops(g, index, bn.name, bn.ipu);
  auto shapeConst = [&](const Shape &shape) {
    std::vector<uint8_t> data(shape.size() * 8);
    std::memcpy(data.data(), shape.data(), data.size());
    return addConstant(g, bn.name + "_shape", {DType::I64, {int64_t(shape.size())}}, data);
  };
  auto scalar = [&](const char *what, double v) { return addFloatConstant(g, bn.name + what, x.dtype, {}, {v}); };
  ir::Attributes reduce;
  reduce.set("axes", axes);
  reduce.set("keepdims", int64_t(1));
  const std::string mean = ops.add("ReduceMean", {bn.inputs[0]}, "", reduce);
  const std::string centred = ops.add("Sub", {bn.inputs[0], mean}, "");
  const std::string var = ops.add("ReduceMean", {ops.add("Mul", {centred, centred}, "")}, "", reduce);
  const std::string stddev = ops.add("Sqrt", {ops.add("Add", {var, scalar("_epsilon", eps)}, "")}, "");
  const std::string normed = ops.add("Div", {centred, stddev}, "");
  const std::string scaled = ops.add("Mul", {normed, ops.add("Reshape", {bn.inputs[1], shapeConst(cshape)}, "")}, "");
  ops.add("Add", {scaled, ops.add("Reshape", {bn.inputs[2], shapeConst(cshape)}, "")}, outputs[0]);
  const std::string keep = scalar("_momentum", momentum), take = scalar("_one_minus_momentum", 1.0 - momentum);
  for (size_t k : {size_t(1), size_t(2)}) {
    if (k >= outputs.size() || outputs[k].empty())
      continue;
    const std::string batch = ops.add("Reshape", {k == 1 ? mean : var, shapeConst({C})}, "");
    ops.add("Add", {ops.add("Mul", {bn.inputs[k + 2], keep}, ""), ops.add("Mul", {batch, take}, "")}, outputs[k]);
  }
  return ops.next() - index;
}

// Inference BatchNormalization whose parameters are variables (a model
// exported in eval mode being trained, its BN affine fine-tuned):
//   Y = (X - mean) * (scale / sqrt(var + epsilon)) + B, per channel,
// so its gradient comes from those ops'. Returns how many ops stand in its place.
size_t decomposeRuntimeBatchNorm(ir::Graph &g, size_t index, const std::set<std::string> &captured) {
  const ir::Op bn = *g.ops()[index];
  const ir::TensorInfo x = g.tensor(bn.inputs[0]).info;
  Shape cshape(x.shape.size() - 1, 1);
  cshape[0] = x.shape[1];
  std::vector<uint8_t> data(cshape.size() * 8);
  std::memcpy(data.data(), cshape.data(), data.size());
  const std::string shape = addConstant(g, bn.name + "_shape", {DType::I64, {int64_t(cshape.size())}}, data);
  const std::string eps =
      addFloatConstant(g, bn.name + "_epsilon", x.dtype, {}, {bn.attrs.getFloat("epsilon", 1e-5)});
  const std::vector<std::string> in = bn.inputs;
  const std::string out = bn.outputs[0];
  removeOpAndDeadOutputs(g, index, captured);
  OpInserter ops(g, index, bn.name, bn.ipu);
  auto channel = [&](size_t i) { return ops.add("Reshape", {in[i], shape}); };
  const std::string factor = ops.add("Div", {channel(1), ops.add("Sqrt", {ops.add("Add", {channel(4), eps})})});
  const std::string centred = ops.add("Sub", {in[0], channel(3)});
  ops.add("Add", {ops.add("Mul", {centred, factor}), channel(2)}, out);
  return ops.next() - index;
}

} // namespace

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
    if (bn.attrs.getInt("training_mode", 0) != 0) {
      i += decomposeTrainingBatchNorm(g, i, captured) - 1;
      ++count;
      continue;
    }
    auto affine = constantBatchNormAffine(g, bn, captured);
    const bool runtimeParams = std::any_of(bn.inputs.begin() + 1, bn.inputs.end(), [&](const std::string &p) {
      return g.hasTensor(p) && g.tensor(p).kind == ir::TensorKind::Variable;
    });
    if (!affine && runtimeParams && bn.outputs.size() == 1) {
      i += decomposeRuntimeBatchNorm(g, i, captured) - 1;
      ++count;
      continue;
    }
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
