// popops on the lowering registry (compiler/lib), as the ONNX path uses it.
#include "popc/popops.hpp"

#include "lower_op.h"

#include "compiler/ir/op_registry.h"
#include "compiler/ops/elementwise.h"
#include "support/error.h"

namespace popc::api::popops {

using detail::OpCall;

Tensor map(Graph &g, const std::string &op, const std::vector<Tensor> &inputs, program::Sequence &prog,
           const std::string &name, const std::vector<double> &params) {
  OpCall call(g, prog, name, op.c_str());
  if (params.empty())
    return call.op(op, inputs).at(0);
  // Kernel parameters: the output follows numpy broadcasting of the inputs.
  std::vector<std::size_t> shape;
  for (const Tensor &t : inputs) {
    Shape s = ir::broadcastShapes(Shape(shape.begin(), shape.end()), Shape(t.shape().begin(), t.shape().end()));
    shape.assign(s.begin(), s.end());
  }
  const auto kernel = ops::elementwiseFromName(op);
  if (!kernel || ops::info(*kernel).arity == ops::kNoKernel) {
    std::vector<std::string_view> names;
    for (ops::Elementwise e : ops::allElementwise())
      if (ops::info(e).arity != ops::kNoKernel)
        names.push_back(ops::name(e));
    fail("popops::map: '{}' is not an elementwise op with parameters: use one of {}", op, fmt::join(names, " "));
  }
  return call.elementwise(*kernel, inputs, inputs.at(0).elementType(), shape, params);
}

#define POPC_BINARY(fn, op)                                                                                            \
  Tensor fn(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name) {          \
    return map(g, op, {a, b}, prog, name);                                                                             \
  }
POPC_BINARY(add, "Add")
POPC_BINARY(sub, "Sub")
POPC_BINARY(mul, "Mul")
POPC_BINARY(div, "Div")
POPC_BINARY(pow, "Pow")
POPC_BINARY(max, "Max")
POPC_BINARY(min, "Min")
POPC_BINARY(lt, "Less")
POPC_BINARY(gt, "Greater")
POPC_BINARY(eq, "Equal")
#undef POPC_BINARY

#define POPC_UNARY(fn, op)                                                                                             \
  Tensor fn(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name) {                           \
    return map(g, op, {a}, prog, name);                                                                                \
  }
POPC_UNARY(neg, "Neg")
POPC_UNARY(abs, "Abs")
POPC_UNARY(exp, "Exp")
POPC_UNARY(log, "Log")
POPC_UNARY(sqrt, "Sqrt")
POPC_UNARY(logicalNot, "Not")
#undef POPC_UNARY

Tensor square(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name) {
  return map(g, "Mul", {a, a}, prog, name);
}

static void inPlace(Graph &g, const char *op, const Tensor &a, const Tensor &b, program::Sequence &prog,
                    const std::string &name) {
  OpCall call(g, prog, name, op);
  Tensor r = call.op(op, {a, b}).at(0);
  if (r.shape() != a.shape())
    fail("{}: in-place result {} does not have the shape of the destination {}", call.name, r.shapeString(),
         a.shapeString());
  call.copy(r, a);
}

void addInPlace(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name) {
  inPlace(g, "Add", a, b, prog, name);
}
void subInPlace(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name) {
  inPlace(g, "Sub", a, b, prog, name);
}
void mulInPlace(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name) {
  inPlace(g, "Mul", a, b, prog, name);
}

void scaledAddTo(Graph &g, const Tensor &a, const Tensor &b, float scale, program::Sequence &prog,
                 const std::string &name) {
  OpCall call(g, prog, name, "scaledAddTo");
  Tensor s = call.scalarConstant(b.elementType(), scale);
  Tensor scaled = call.op("Mul", {b, s}).at(0);
  Tensor r = call.op("Add", {a, scaled}).at(0);
  call.copy(r, a);
}

Tensor reduce(Graph &g, const Tensor &in, const std::vector<std::size_t> &dims, Operation op,
              program::Sequence &prog, const std::string &name) {
  static const char *types[] = {"ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin", "ReduceSumSquare",
                                "ReduceMean"};
  const char *type = types[static_cast<int>(op)];
  OpCall call(g, prog, name, type);
  if (dims.empty()) { // nothing reduced: a copy
    return call.elementwise(ops::Elementwise::Copy, {in}, in.elementType(), in.shape());
  }
  ir::Attributes attrs;
  std::vector<int64_t> axes;
  for (std::size_t d : dims) {
    if (d >= in.rank())
      fail("{}: dimension {} out of range for {}", call.name, d, in.shapeString());
    axes.push_back(int64_t(d));
  }
  attrs.set("axes", axes);
  attrs.set("keepdims", int64_t(0));
  return call.op(type, {in}, attrs, 11).at(0); // opset 11: axes is an attribute
}

void fill(Graph &g, const Tensor &t, double value, program::Sequence &prog, const std::string &name) {
  OpCall call(g, prog, name, "fill");
  Tensor c = call.scalarConstant(t.elementType(), value);
  Tensor r = call.elementwise(ops::Elementwise::Copy, {c}, t.elementType(), t.shape());
  call.copy(r, t);
}

void zero(Graph &g, const Tensor &t, program::Sequence &prog, const std::string &name) {
  fill(g, t, 0.0, prog, name.empty() ? "zero" : name);
}

Tensor cast(Graph &g, const Tensor &in, Type to, program::Sequence &prog, const std::string &name) {
  OpCall call(g, prog, name, "cast");
  return call.elementwise(in.elementType() == to ? ops::Elementwise::Copy : ops::Elementwise::Cast, {in}, to, in.shape());
}

} // namespace popc::api::popops
