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
// - GatherElements whose data line (along `axis`) or index row is over
//   kMaxRowBytes (GridSample and RoiAlign of a large image gather from a whole
//   image plane): with the axis last, rows R, line D and J indices per row,
//   the line splits into C chunks of Dc and the indices into B bands of Jb;
//   every (row, band, chunk) gathers its band from its chunk at the index's
//   position within its own chunk, a GatherElements over [R, B, C, Dc] rows
//   that each fit a tile, and a Where per chunk picks each index's own.
//   Exact: the chosen value is the element itself.
// Smaller rows keep their one-vertex kernels (the same outputs either way,
// within rounding for Softmax and InstanceNormalization: the sums run in
// another order).
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

// GatherElements sizes: line chunks of kChunkBytes, index bands of kBandIndices.
constexpr uint64_t kChunkBytes = 64 * 1024;
constexpr int64_t kBandIndices = 2048;

// The axis of a GatherElements whose indices have the data's other dims, or -1.
int64_t elementAxis(const ir::Graph &g, const ir::Op &op) {
  const Shape &data = g.tensor(op.inputs[0]).info.shape, &idx = g.tensor(op.inputs[1]).info.shape;
  if (data.size() != idx.size() || data.empty())
    return -1;
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", 0), int64_t(data.size()));
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis && data[d] != idx[d])
      return -1;
  return axis;
}

bool longGatherElements(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "GatherElements" || op.inputs.size() != 2 || op.outputs.size() != 1)
    return false;
  const int64_t axis = elementAxis(g, op);
  if (axis < 0)
    return false;
  const ir::TensorInfo &data = g.tensor(op.inputs[0]).info, &idx = g.tensor(op.inputs[1]).info;
  const uint64_t line = uint64_t(data.shape[size_t(axis)]) * dtypeSize(data.dtype);
  const uint64_t row = uint64_t(idx.shape[size_t(axis)]) * (dtypeSize(idx.dtype) + dtypeSize(data.dtype));
  return line > kMaxRowBytes || row > kMaxRowBytes;
}

size_t rewriteGatherElements(ir::Graph &g, size_t at, const ir::Op &op) {
  OpInserter ops(g, at, op.name, op.ipu);
  const ir::TensorInfo data = g.tensor(op.inputs[0]).info, idxInfo = g.tensor(op.inputs[1]).info;
  const int64_t axis = elementAxis(g, op), rank = int64_t(data.shape.size());
  auto i64 = [&](const std::vector<int64_t> &v, bool scalar = false) {
    return addInt64Constant(g, op.name + "_c", v, scalar);
  };
  auto transpose = [&](const std::string &x, const std::vector<int64_t> &perm) {
    ir::Attributes a;
    a.set("perm", perm);
    return ops.add("Transpose", {x}, "", a);
  };
  // The axis last: [rows..., D] and [rows..., J].
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  const bool moved = axis != rank - 1;
  std::string x = moved ? transpose(op.inputs[0], perm) : op.inputs[0];
  std::string idx = moved ? transpose(op.inputs[1], perm) : op.inputs[1];
  const int64_t D = data.shape[size_t(axis)], J = idxInfo.shape[size_t(axis)];
  const int64_t R = data.elements() / std::max<int64_t>(D, 1);
  const int64_t Dc = std::min<int64_t>(D, std::max<int64_t>(1, int64_t(kChunkBytes / dtypeSize(data.dtype))));
  const int64_t C = (D + Dc - 1) / Dc, Jb = std::min<int64_t>(J, kBandIndices), B = (J + Jb - 1) / Jb;
  // Data [R, C*Dc] (zero-padded) as [R, 1, C, Dc], one copy per band.
  x = reshape(ops, g, op.name, x, {R, D});
  if (C * Dc != D)
    x = ops.add("Pad", {x, i64({0, 0, 0, C * Dc - D})});
  x = ops.add("Expand", {reshape(ops, g, op.name, x, {R, 1, C, Dc}), i64({R, B, C, Dc})});
  // Indices as int64 in [0, D) (negative ones count from the end), padded with 0, [R, B, 1, Jb].
  idx = reshape(ops, g, op.name, idx, {R, J});
  if (idxInfo.dtype != DType::I64) {
    ir::Attributes a;
    a.set("to", int64_t(7)); // INT64
    idx = ops.add("Cast", {idx}, "", a);
  }
  idx = ops.add("Where", {ops.add("Less", {idx, i64({0}, true)}), ops.add("Add", {idx, i64({D}, true)}), idx});
  if (B * Jb != J)
    idx = ops.add("Pad", {idx, i64({0, 0, 0, B * Jb - J})});
  idx = reshape(ops, g, op.name, idx, {R, B, 1, Jb});
  const std::string chunk = ops.add("Div", {idx, i64({Dc}, true)});
  const std::string local = ops.add("Sub", {idx, ops.add("Mul", {chunk, i64({Dc}, true)})});
  ir::Attributes last;
  last.set("axis", int64_t(3));
  // Every chunk's value at the index's in-chunk position, then the index's own
  // chunk's (Where, chunk by chunk: contiguous slices, and exact for any value).
  const std::string all = ops.add("GatherElements", {x, ops.add("Expand", {local, i64({R, B, C, Jb})})}, "", last);
  std::string picked = ops.slice(all, 2, 0, 1);
  for (int64_t c = 1; c < C; ++c)
    picked = ops.add("Where", {ops.add("Equal", {chunk, i64({c}, true)}), ops.slice(all, 2, c, c + 1), picked});
  std::string y = reshape(ops, g, op.name, picked, {R, B * Jb});
  if (B * Jb != J)
    y = ops.slice(y, 1, 0, J);
  Shape outShape;
  for (int64_t d : perm)
    outShape.push_back(idxInfo.shape[size_t(d)]);
  if (!moved) {
    reshape(ops, g, op.name, y, outShape, op.outputs[0]);
  } else {
    std::vector<int64_t> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i)
      inverse[size_t(perm[i])] = int64_t(i);
    ir::Attributes a;
    a.set("perm", inverse);
    ops.add("Transpose", {reshape(ops, g, op.name, y, outShape)}, op.outputs[0], a);
  }
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
  // Pad takes its pads as an input from opset 11 on.
  if (ir.main.opset >= 11)
    count += replaceOps(ir, longGatherElements,
                        [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteGatherElements(g, at, r.op); });
  if (count)
    log::get("passes")->debug("long-row-decomposition: {} Softmax/InstanceNormalization/GatherElements rows over tiles",
                              count);
  return count;
}

} // namespace popc::passes
