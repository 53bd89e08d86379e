// ScatterND and MaxUnpool as ScatterElements on a flat view, which popc lowers
// (run-time indices, reductions):
//   ScatterND(data, indices [.., k], updates): with P rows of T elements
//   (data viewed [prod(shape[:k]), prod(shape[k:])]), each index tuple is the
//   row sum_j indices[.., j] * stride_j (negative entries count from the end);
//   ScatterElements(axis 0) writes each update row there, with the same reduction.
//   MaxUnpool(X, I): X's values at MaxPool's flat indices I of a zero tensor.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <numeric>

namespace popc::passes {

namespace {

int64_t product(const Shape &s, size_t from, size_t to) {
  return std::accumulate(s.begin() + from, s.begin() + to, int64_t(1), std::multiplies<>());
}

size_t decomposeScatterND(ir::Graph &g, size_t index, const ir::Op &op) {
  const Shape data = g.tensor(op.inputs[0]).info.shape;
  const Shape idx = g.tensor(op.inputs[1]).info.shape;
  const size_t k = size_t(idx.back());
  const int64_t rows = product(data, 0, k), row = product(data, k, data.size());
  const int64_t updates = product(idx, 0, idx.size() - 1);
  std::vector<int64_t> strides(k), dims(data.begin(), data.begin() + k);
  for (size_t j = 0; j < k; ++j)
    strides[j] = product(data, j + 1, k);
  OpInserter ops(g, index, op.name, op.ipu);
  auto constant = [&](const std::vector<int64_t> &v) { return addInt64Constant(g, op.name + "_c", v); };
  // Negative entries count from the end of their dimension.
  const std::string i = op.inputs[1];
  const std::string wrapped =
      ops.add("Where", {ops.add("Less", {i, addInt64Constant(g, op.name + "_zero", {0}, true)}),
                        ops.add("Add", {i, constant(dims)}), i});
  ir::Attributes keep;
  keep.set("keepdims", int64_t(1));
  std::vector<std::string> sumInputs{ops.add("Mul", {wrapped, constant(strides)})};
  if (g.opset >= 13)
    sumInputs.push_back(constant({-1}));
  else
    keep.set("axes", std::vector<int64_t>{-1});
  const std::string flatRows = ops.add("ReduceSum", sumInputs, "", keep);
  const std::string at = ops.add("Expand", {ops.add("Reshape", {flatRows, constant({updates, 1})}), constant({updates, row})});
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

} // namespace

size_t decomposeScatters(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  const std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t count = 0;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    const ir::Op &candidate = *g.ops()[i];
    if (!isOnnxOp(candidate) || (candidate.type != "ScatterND" && candidate.type != "MaxUnpool"))
      continue;
    const ir::Op op = candidate;
    const ir::TensorInfo out = g.tensor(op.outputs[0]).info;
    removeOpAndDeadOutputs(g, i, captured);
    i += (op.type == "ScatterND" ? decomposeScatterND(g, i, op) : decomposeMaxUnpool(g, i, op, out)) - 1;
    ++count;
  }
  if (count)
    log::get("passes")->debug("scatter-decomposition: {} ScatterND/MaxUnpool as ScatterElements", count);
  return count;
}

} // namespace popc::passes
