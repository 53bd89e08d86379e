// Quantized ops (ONNX QuantizeLinear family; ORT's quantizer and PyTorch's QDQ
// export produce them). Only their outputs here: the quantize-decomposition
// pass (compiler/passes/quantize_decompose.cpp) rewrites each into casts,
// float arithmetic and MatMulInteger/ConvInteger, which lower to int8 vertices.
#include "compiler/ir/op_helpers.h"

namespace popc::ir::detail {

namespace {

bool isQuantized(DType t) { return t == DType::U8 || t == DType::I8; }

void requireQuantized(const Op &op, const TensorInfo &t, const char *what) {
  if (!isQuantized(t.dtype))
    failOp(op, "{} is {}; expected uint8 or int8", what, dtypeName(t.dtype));
}

// The shape of the float op this one computes (MatMul or Conv) on the given inputs.
Shape floatTwinShape(const Op &op, const Graph &graph, const char *type, std::vector<size_t> inputs) {
  Graph twinGraph;
  Op twin;
  twin.type = type;
  twin.name = op.name;
  twin.attrs = op.attrs;
  for (size_t k = 0; k < inputs.size(); ++k) {
    Tensor t;
    t.name = "operand" + std::to_string(k);
    t.info = {DType::F32, inputInfo(op, graph, inputs[k]).shape};
    t.kind = TensorKind::Input;
    twinGraph.addTensor(std::move(t));
    twin.inputs.push_back("operand" + std::to_string(k));
  }
  return OpRegistry::instance().find(type)->infer(twin, twinGraph)[0].shape;
}

// A scale and zero point per tensor (one element), or per axis: 1-D with x's
// size along `axis` (in [-rank, rank - 1]).
void requireScaleFits(const Op &op, const Graph &graph, const char *scale, const char *zero) {
  const Shape &x = inputInfo(op, graph, 0).shape;
  for (size_t i : {size_t(1), size_t(2)}) {
    if (!op.hasInput(i))
      continue;
    const TensorInfo &p = inputInfo(op, graph, i);
    if (p.elements() == 1 && p.shape.size() <= 1)
      continue;
    const int64_t rank = int64_t(x.size()), axis = op.attrs.getInt("axis", 1);
    if (axis < -rank || axis >= rank)
      failOp(op, "axis {} is out of range for input x of rank {} (a per-axis {} needs an axis of x)", axis, rank,
             i == 1 ? scale : zero);
    const int64_t along = x[size_t(axis < 0 ? axis + rank : axis)];
    if (p.shape != Shape{along})
      failOp(op, "{} {} must be a scalar or 1-D with x's {} elements along axis {}", i == 1 ? scale : zero,
             shapeToString(p.shape), along, axis);
  }
}

std::vector<TensorInfo> inferQuantizeLinear(const Op &op, const Graph &graph) {
  requireFloat(op, inputInfo(op, graph, 0), "input x");
  requireFloat(op, inputInfo(op, graph, 1), "y_scale");
  requireScaleFits(op, graph, "y_scale", "y_zero_point");
  DType out = DType::U8;
  if (op.hasInput(2)) {
    requireQuantized(op, inputInfo(op, graph, 2), "y_zero_point");
    out = inputInfo(op, graph, 2).dtype;
  }
  return {TensorInfo{out, inputInfo(op, graph, 0).shape}};
}

std::vector<TensorInfo> inferDequantizeLinear(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (!isQuantized(x.dtype) && x.dtype != DType::I32)
    failOp(op, "input x is {}; expected uint8, int8 or int32", dtypeName(x.dtype));
  requireFloat(op, inputInfo(op, graph, 1), "x_scale");
  if (op.hasInput(2))
    requireSameDType(op, x, inputInfo(op, graph, 2), "input x", "x_zero_point");
  requireScaleFits(op, graph, "x_scale", "x_zero_point");
  return {TensorInfo{inputInfo(op, graph, 1).dtype, x.shape}};
}

std::vector<TensorInfo> inferDynamicQuantizeLinear(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.dtype != DType::F32)
    failOp(op, "input x is {}; expected float32", dtypeName(x.dtype));
  return {TensorInfo{DType::U8, x.shape}, TensorInfo{DType::F32, {}}, TensorInfo{DType::U8, {}}};
}

std::vector<TensorInfo> inferIntegerOp(const Op &op, const Graph &graph, const char *floatOp) {
  requireQuantized(op, inputInfo(op, graph, 0), "input 0");
  requireQuantized(op, inputInfo(op, graph, 1), "input 1");
  return {TensorInfo{DType::I32, floatTwinShape(op, graph, floatOp, {0, 1})}};
}

// QLinearMatMul/QLinearConv: (x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, B]).
std::vector<TensorInfo> inferQLinearOp(const Op &op, const Graph &graph, const char *floatOp) {
  requireQuantized(op, inputInfo(op, graph, 0), "input a/x");
  requireQuantized(op, inputInfo(op, graph, 3), "input b/w");
  requireQuantized(op, inputInfo(op, graph, 7), "y_zero_point");
  for (size_t s : {1, 4, 6})
    requireFloat(op, inputInfo(op, graph, s), "a scale");
  if (op.hasInput(8) && inputInfo(op, graph, 8).dtype != DType::I32)
    failOp(op, "bias B is {}; expected int32", dtypeName(inputInfo(op, graph, 8).dtype));
  return {TensorInfo{inputInfo(op, graph, 7).dtype, floatTwinShape(op, graph, floatOp, {0, 3})}};
}

} // namespace

void registerQuantOps(OpRegistry &reg) {
  reg.add({"QuantizeLinear", 2, 3, inferQuantizeLinear});
  reg.add({"DequantizeLinear", 2, 3, inferDequantizeLinear});
  reg.add({"DynamicQuantizeLinear", 1, 1, inferDynamicQuantizeLinear});
  reg.add({"MatMulInteger", 2, 4, [](const Op &op, const Graph &g) { return inferIntegerOp(op, g, "MatMul"); }});
  reg.add({"ConvInteger", 2, 4, [](const Op &op, const Graph &g) { return inferIntegerOp(op, g, "Conv"); }});
  reg.add({"QLinearMatMul", 8, 8, [](const Op &op, const Graph &g) { return inferQLinearOp(op, g, "MatMul"); }});
  reg.add({"QLinearConv", 8, 9, [](const Op &op, const Graph &g) { return inferQLinearOp(op, g, "Conv"); }});
}

} // namespace popc::ir::detail
