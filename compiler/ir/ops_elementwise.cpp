// Elementwise ops: numpy-broadcasting binaries and unary activations.
#include "compiler/ir/op_helpers.h"

namespace popc::ir::detail {

namespace {
std::vector<TensorInfo> inferBinary(const Op &op, const Graph &graph) {
  const TensorInfo &a = inputInfo(op, graph, 0);
  const TensorInfo &b = inputInfo(op, graph, 1);
  requireSameDType(op, a, b, "input A", "input B");
  if (a.dtype == DType::Bool)
    failOp(op, "bool inputs are not supported");
  if (op.attrs.has("broadcast") || op.attrs.has("axis"))
    failOp(op, "legacy (opset < 7) 'broadcast'/'axis' attributes are not supported");
  return {TensorInfo{a.dtype, broadcastShapes(a.shape, b.shape)}};
}

std::vector<TensorInfo> inferFloatUnary(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  return {x};
}

std::vector<TensorInfo> inferRelu(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  // Relu-14 added signed integer types.
  bool ok = isFloat(x.dtype) ||
            (graph.opset >= 14 && x.dtype != DType::U8 && x.dtype != DType::Bool);
  if (!ok)
    failOp(op, "input type {} is not supported at opset {}", dtypeName(x.dtype), graph.opset);
  return {x};
}

std::vector<TensorInfo> inferIdentity(const Op &op, const Graph &graph) {
  return {inputInfo(op, graph, 0)};
}

// Abs, Neg: numeric types (signed integers included), not bool.
std::vector<TensorInfo> inferNumericUnary(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.dtype == DType::Bool)
    failOp(op, "bool input is not supported");
  return {x};
}

// Sum, Max, Min: any number of inputs of one type, broadcast together.
std::vector<TensorInfo> inferVariadic(const Op &op, const Graph &graph) {
  TensorInfo out = inputInfo(op, graph, 0);
  if (out.dtype == DType::Bool)
    failOp(op, "bool inputs are not supported");
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    const TensorInfo &in = inputInfo(op, graph, i);
    requireSameDType(op, out, in, "input 0", fmt::format("input {}", i).c_str());
    out.shape = broadcastShapes(out.shape, in.shape);
  }
  return {out};
}

// Clip: min/max are attributes before opset 11, optional scalar inputs after.
std::vector<TensorInfo> inferClip(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  for (size_t i = 1; i < op.inputs.size(); ++i)
    if (op.hasInput(i) && inputInfo(op, graph, i).elements() != 1)
      failOp(op, "input {} must be a scalar", i);
  return {x};
}
} // namespace

void registerElementwiseOps(OpRegistry &reg) {
  for (const char *type : {"Add", "Sub", "Mul", "Div"})
    reg.add({type, 2, 2, inferBinary});
  for (const char *type : {"Sigmoid", "Tanh"})
    reg.add({type, 1, 1, inferFloatUnary});
  reg.add({"Relu", 1, 1, inferRelu});
  reg.add({"Pow", 2, 2, inferBinary});
  for (const char *type : {"Exp", "Log", "Sqrt", "Reciprocal", "Floor", "Ceil", "Sin", "Cos", "Erf", "LeakyRelu"})
    reg.add({type, 1, 1, inferFloatUnary});
  for (const char *type : {"Abs", "Neg"})
    reg.add({type, 1, 1, inferNumericUnary});
  for (const char *type : {"Sum", "Max", "Min"})
    reg.add({type, 1, kVariadic, inferVariadic});
  reg.add({"Clip", 1, 3, inferClip});
  reg.add({"Identity", 1, 1, inferIdentity});
}

} // namespace popc::ir::detail
