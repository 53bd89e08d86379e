// ScatterND, MaxUnpool, and GatherND with run-time indices as ScatterElements
// and Gather on a flat view, which popc lowers with run-time indices:
//   ScatterND(data, indices [.., k], updates): with P rows of T elements
//   (data viewed [prod(shape[:k]), prod(shape[k:])]), each index tuple is the
//   row sum_j indices[.., j] * stride_j (negative entries count from the end);
//   ScatterElements(axis 0) writes each update row there, with the same reduction.
//   MaxUnpool(X, I): X's values at MaxPool's flat indices I of a zero tensor.
//   GatherND(data, indices) whose indices are known only at run time: Gather
//   (axis 0) of the same rows (plus each batch entry's first row with batch_dims).
// (GatherND with constant indices stays: its exchange is planned at compile time.)
// GatherElements / ScatterElements whose indices are narrower than the data in
// another dim run on the Slice of the data they reach (narrowElements).
#include "compiler/ir/op_attrs.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <numeric>

namespace popc::passes {

namespace {

int64_t product(const Shape &s, size_t from, size_t to) {
  return std::accumulate(s.begin() + from, s.begin() + to, int64_t(1), std::multiplies<>());
}

// The row of a [rows, row elements] view of `data` (dims [from, from + k) are
// the rows) that each index tuple of `indices` [.., k] names; shape indices[:-1].
std::string rowOfTuples(ir::Graph &g, OpInserter &ops, const ir::Op &op, const Shape &data, size_t from,
                        const std::string &indices, size_t k) {
  std::vector<int64_t> strides(k), dims(data.begin() + from, data.begin() + from + k);
  for (size_t j = 0; j < k; ++j)
    strides[j] = product(data, from + j + 1, from + k);
  auto constant = [&](const std::vector<int64_t> &v) { return addInt64Constant(g, op.name + "_c", v); };
  // Negative entries count from the end of their dimension.
  const std::string wrapped = wrapNegativeIndices(ops, g, op.name, indices, constant(dims));
  return ops.reduce("ReduceSum", ops.add("Mul", {wrapped, constant(strides)}), {-1}, false);
}

size_t decomposeGatherND(ir::Graph &g, size_t index, const ir::Op &op, const ir::TensorInfo &out) {
  const Shape data = g.tensor(op.inputs[0]).info.shape;
  const Shape idx = g.tensor(op.inputs[1]).info.shape;
  const size_t b = size_t(op.attrs.getInt("batch_dims", 0)), k = size_t(idx.back());
  const int64_t perBatch = product(data, b, b + k), row = product(data, b + k, data.size());
  OpInserter ops(g, index, op.name, op.ipu);
  auto constant = [&](const std::vector<int64_t> &v) { return addInt64Constant(g, op.name + "_c", v); };
  std::string rows = rowOfTuples(g, ops, op, data, b, op.inputs[1], k);
  if (b > 0) { // + each position's batch entry times the rows per batch entry
    const Shape positions(idx.begin(), idx.end() - 1);
    const int64_t inner = product(positions, b, positions.size());
    std::vector<int64_t> first(size_t(product(positions, 0, positions.size())));
    for (size_t p = 0; p < first.size(); ++p)
      first[p] = int64_t(p) / inner * perBatch;
    rows = ops.add("Add", {rows, addInt64Tensor(g, op.name + "_batch", positions, first)});
  }
  ir::Attributes axis0;
  axis0.set("axis", int64_t(0));
  const std::string gathered =
      ops.add("Gather", {ops.add("Reshape", {op.inputs[0], constant({product(data, 0, b) * perBatch, row})}),
                         ops.add("Reshape", {rows, constant({-1})})},
              "", axis0);
  ops.add("Reshape", {gathered, constant(out.shape)}, op.outputs[0]);
  return ops.next() - index;
}

size_t decomposeScatterND(ir::Graph &g, size_t index, const ir::Op &op) {
  const Shape data = g.tensor(op.inputs[0]).info.shape;
  const Shape idx = g.tensor(op.inputs[1]).info.shape;
  const size_t k = size_t(idx.back());
  const int64_t rows = product(data, 0, k), row = product(data, k, data.size());
  const int64_t updates = product(idx, 0, idx.size() - 1);
  OpInserter ops(g, index, op.name, op.ipu);
  auto constant = [&](const std::vector<int64_t> &v) { return addInt64Constant(g, op.name + "_c", v); };
  const std::string flatRows = rowOfTuples(g, ops, op, data, 0, op.inputs[1], k);
  const std::string at =
      ops.add("Expand", {ops.add("Reshape", {flatRows, constant({updates, 1})}), constant({updates, row})});
  ir::Attributes scatter;
  scatter.set("axis", int64_t(0));
  scatter.set("reduction", op.attrs.getString("reduction", "none"));
  const std::string written =
      ops.add("ScatterElements", {ops.add("Reshape", {op.inputs[0], constant({rows, row})}), at,
                                  ops.add("Reshape", {op.inputs[2], constant({updates, row})})},
              "", scatter);
  ops.add("Reshape", {written, constant(data)}, op.outputs[0]);
  return ops.next() - index;
}

// MaxPool's indices are flat positions in the unpooled shape the pool's
// attributes give; a larger output_shape pads that at the end (as ONNX's
// reference and ONNX Runtime do).
size_t decomposeMaxUnpool(ir::Graph &g, size_t index, const ir::Op &op, const ir::TensorInfo &out) {
  const Shape x = g.tensor(op.inputs[0]).info.shape;
  const size_t spatial = x.size() - 2;
  std::vector<int64_t> kernel = op.attrs.getInts("kernel_shape"), strides = op.attrs.getInts("strides"),
                       pads = op.attrs.getInts("pads");
  strides.resize(spatial, 1);
  pads.resize(2 * spatial, 0);
  Shape unpooled{x[0], x[1]};
  for (size_t d = 0; d < spatial; ++d)
    unpooled.push_back((x[d + 2] - 1) * strides[d] - pads[d] - pads[d + spatial] + kernel[d]);
  OpInserter ops(g, index, op.name, op.ipu);
  auto constant = [&](const std::vector<int64_t> &v) { return addInt64Constant(g, op.name + "_c", v); };
  const std::string zeros =
      ops.add("Expand", {addConstant(g, op.name + "_zero", {out.dtype, {}}, std::vector<uint8_t>(dtypeSize(out.dtype))),
                         constant({product(unpooled, 0, unpooled.size())})});
  const std::string written = ops.add(
      "ScatterElements", {zeros, ops.add("Reshape", {op.inputs[1], constant({-1})}),
                          ops.add("Reshape", {op.inputs[0], constant({-1})})});
  if (unpooled == out.shape) {
    ops.add("Reshape", {written, constant(out.shape)}, op.outputs[0]);
  } else {
    std::vector<int64_t> padding(2 * out.shape.size(), 0);
    for (size_t d = 0; d < out.shape.size(); ++d)
      padding[out.shape.size() + d] = out.shape[d] - unpooled[d];
    ops.add("Pad", {ops.add("Reshape", {written, constant(unpooled)}), constant(padding)}, op.outputs[0]);
  }
  return ops.next() - index;
}

// GatherElements / ScatterElements whose indices are smaller than the data in
// a dim other than the axis touch only the data's leading part of that dim.
// The op runs on that Slice, so that indices and data share every other dim
// and the lowering splits it row by row (else one tile holds all the data).
// A ScatterElements then puts its part back: a Concat with the rest of the
// data along each narrowed dim, innermost slice first.
bool narrowableElements(const ir::Graph &g, const ir::Op &op) {
  if ((op.type != "GatherElements" && op.type != "ScatterElements") || op.outputs.size() != 1 ||
      op.inputs.size() != (op.type == "GatherElements" ? 2u : 3u) || g.opset < 11)
    return false;
  const Shape &data = g.tensor(op.inputs[0]).info.shape, &idx = g.tensor(op.inputs[1]).info.shape;
  if (data.empty() || data.size() != idx.size() || g.tensor(op.inputs[1]).info.elements() == 0)
    return false;
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", 0), int64_t(data.size()));
  bool narrower = false;
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis) {
      if (idx[d] > data[d])
        return false; // invalid: inference reports it
      narrower |= idx[d] < data[d];
    }
  return narrower;
}

size_t narrowElements(ir::Graph &g, size_t index, const ir::Op &op) {
  const Shape data = g.tensor(op.inputs[0]).info.shape, idx = g.tensor(op.inputs[1]).info.shape;
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", 0), int64_t(data.size()));
  OpInserter ops(g, index, op.name, op.ipu);
  std::vector<std::pair<int64_t, std::string>> slices; // (dim, the data before slicing it)
  std::string part = op.inputs[0];
  for (size_t d = 0; d < data.size(); ++d)
    if (int64_t(d) != axis && idx[d] < data[d]) {
      slices.push_back({int64_t(d), part});
      part = ops.slice(part, int64_t(d), 0, idx[d]);
    }
  if (op.type == "GatherElements") {
    ops.add("GatherElements", {part, op.inputs[1]}, op.outputs[0], op.attrs);
    return ops.next() - index;
  }
  std::string result = ops.add("ScatterElements", {part, op.inputs[1], op.inputs[2]}, "", op.attrs);
  for (size_t k = slices.size(); k-- > 0;) {
    const auto &[d, whole] = slices[k];
    ir::Attributes along;
    along.set("axis", d);
    const std::string rest = ops.slice(whole, d, idx[size_t(d)], g.tensor(whole).info.shape[size_t(d)]);
    result = ops.add("Concat", {result, rest}, k == 0 ? op.outputs[0] : "", along);
  }
  return ops.next() - index;
}

} // namespace

size_t decomposeIndexOps(ir::Ir &ir) {
  auto select = [](const ir::Graph &g, const ir::Op &op) {
    return op.type == "ScatterND" || op.type == "MaxUnpool" ||
           (op.type == "GatherND" && op.hasInput(1) && !isConstant(g, op.inputs[1]));
  };
  const size_t count = replaceOps(ir, select, [](ir::Graph &g, size_t i, const Replaced &r) {
    return r.op.type == "ScatterND"   ? decomposeScatterND(g, i, r.op)
           : r.op.type == "MaxUnpool" ? decomposeMaxUnpool(g, i, r.op, r.output(0))
                                      : decomposeGatherND(g, i, r.op, r.output(0));
  });
  const size_t narrowed = replaceOps(ir, narrowableElements,
                                    [](ir::Graph &g, size_t i, const Replaced &r) { return narrowElements(g, i, r.op); });
  if (count + narrowed)
    log::get("passes")->debug("index-decomposition: {} ScatterND/MaxUnpool/GatherND on flat views, {} "
                              "GatherElements/ScatterElements on the data their indices reach",
                              count, narrowed);
  return count + narrowed;
}

} // namespace popc::passes
