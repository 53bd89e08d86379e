// Row-wise ops whose one row is too big for a tile's share, as reductions and
// elementwise ops, which split a row over tiles (a Reduce* of a long row
// reduces in two stages; elementwise ops tile by elements):
// - Softmax / LogSoftmax over a row of more than kMaxRowBytes (a language
//   model's vocabulary): max = ReduceMax(x), e = Exp(x - max),
//   y = e / ReduceSum(e), or (x - max) - Log(ReduceSum(e)). Opset < 13 rows
//   (everything from `axis` on) are a Reshape to 2-D and back.
// - InstanceNormalization over a plane of more than kMaxRowBytes: the mean and
//   variance as ReduceMean over the spatial axes, then
//   (x - mean) / Sqrt(var + epsilon) * scale + B, scale and B as [C, 1, ..].
// Smaller rows keep their one-vertex kernels (the same outputs either way,
// within rounding: the sums run in another order).
#include "compiler/ir/op_attrs.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

namespace {

// A quarter of the smallest tile (ipu1's 256 KiB), as rnn-decomposition:
// the row and its result then take half of one.
constexpr uint64_t kMaxRowBytes = 64 * 1024;

bool floatTensor(const ir::Graph &g, const std::string &name) {
  const DType t = g.tensor(name).info.dtype;
  return t == DType::F32 || t == DType::F64 || t == DType::F16;
}

std::string reshape(OpInserter &ops, ir::Graph &g, const std::string &base, const std::string &x, const Shape &shape,
                    std::string out = "") {
  return ops.add("Reshape", {x, addInt64Constant(g, base + "_shape", shape)}, std::move(out));
}

// The softmax rows of `op`: the row length and whether opset < 13 coerces to 2-D.
uint64_t softmaxRowBytes(const ir::Graph &g, const ir::Op &op) {
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  const int64_t axis = ir::softmaxAxis(op, g);
  uint64_t cols = 1;
  for (int64_t d = axis; d < int64_t(x.shape.size()); ++d)
    if (ir::softmaxCoerces2D(g) || d == axis)
      cols *= uint64_t(x.shape[size_t(d)]);
  return cols * dtypeSize(x.dtype);
}

size_t rewriteSoftmax(ir::Graph &g, size_t at, const ir::Op &op) {
  OpInserter ops(g, at, op.name, op.ipu);
  const Shape shape = g.tensor(op.inputs[0]).info.shape;
  const int64_t axis = ir::softmaxAxis(op, g);
  std::string x = op.inputs[0];
  int64_t reduceAxis = axis;
  if (ir::softmaxCoerces2D(g)) {
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < shape.size(); ++d)
      (int64_t(d) < axis ? rows : cols) *= shape[d];
    x = reshape(ops, g, op.name, x, {rows, cols});
    reduceAxis = 1;
  }
  const bool coerced = x != op.inputs[0];
  const std::string out = coerced ? "" : op.outputs[0];
  const std::string centred = ops.add("Sub", {x, ops.reduce("ReduceMax", x, {reduceAxis}, true)});
  const std::string e = ops.add("Exp", {centred});
  const std::string sum = ops.reduce("ReduceSum", e, {reduceAxis}, true);
  const std::string y = op.type == "LogSoftmax" ? ops.add("Sub", {centred, ops.add("Log", {sum})}, out)
                                                : ops.add("Div", {e, sum}, out);
  if (coerced)
    reshape(ops, g, op.name, y, shape, op.outputs[0]);
  return ops.next() - at;
}

size_t rewriteInstanceNorm(ir::Graph &g, size_t at, const ir::Op &op) {
  OpInserter ops(g, at, op.name, op.ipu);
  const ir::TensorInfo &xi = g.tensor(op.inputs[0]).info;
  std::vector<int64_t> spatial;
  Shape channelShape(xi.shape.size() - 1, 1);
  channelShape[0] = xi.shape[1];
  for (size_t d = 2; d < xi.shape.size(); ++d)
    spatial.push_back(int64_t(d));
  const std::string &x = op.inputs[0];
  const std::string centred = ops.add("Sub", {x, ops.reduce("ReduceMean", x, spatial, true)});
  const std::string var = ops.reduce("ReduceMean", ops.add("Mul", {centred, centred}), spatial, true);
  const std::string eps =
      addFloatConstant(g, op.name + "_epsilon", xi.dtype, {}, {op.attrs.getFloat("epsilon", 1e-5)});
  const std::string normed = ops.add("Div", {centred, ops.add("Sqrt", {ops.add("Add", {var, eps})})});
  const std::string scale = reshape(ops, g, op.name, op.inputs[1], channelShape);
  const std::string bias = reshape(ops, g, op.name, op.inputs[2], channelShape);
  ops.add("Add", {ops.add("Mul", {normed, scale}), bias}, op.outputs[0]);
  return ops.next() - at;
}

} // namespace

size_t decomposeLongRows(ir::Ir &ir) {
  // Reshape takes its shape as an input from opset 5 on.
  if (ir.main.opset < 5)
    return 0;
  size_t count = replaceOps(
      ir,
      [](const ir::Graph &g, const ir::Op &op) {
        return (op.type == "Softmax" || op.type == "LogSoftmax") && op.outputs.size() == 1 &&
               floatTensor(g, op.inputs[0]) && softmaxRowBytes(g, op) > kMaxRowBytes;
      },
      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteSoftmax(g, at, r.op); });
  count += replaceOps(
      ir,
      [](const ir::Graph &g, const ir::Op &op) {
        if (op.type != "InstanceNormalization" || op.inputs.size() != 3 || op.outputs.size() != 1)
          return false;
        const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
        const DType t = x.dtype;
        return (t == DType::F32 || t == DType::F64) && x.shape.size() >= 3 &&
               uint64_t(x.elements() / std::max<int64_t>(1, x.shape[0] * x.shape[1])) * dtypeSize(t) > kMaxRowBytes;
      },
      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteInstanceNorm(g, at, r.op); });
  if (count)
    log::get("passes")->debug("long-row-decomposition: {} Softmax/InstanceNormalization rows over tiles", count);
  return count;
}

} // namespace popc::passes
