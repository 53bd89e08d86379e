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
} // namespace

void registerElementwiseOps(OpRegistry &reg) {
  for (const char *type : {"Add", "Sub", "Mul", "Div"})
    reg.add({type, 2, 2, inferBinary});
  for (const char *type : {"Sigmoid", "Tanh"})
    reg.add({type, 1, 1, inferFloatUnary});
  reg.add({"Relu", 1, 1, inferRelu});
  reg.add({"Identity", 1, 1, inferIdentity});
}

} // namespace popc::ir::detail
