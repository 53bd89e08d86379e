#include "lower_op.h"

#include "compiler/ir/op_registry.h"
#include "compiler/lib/ops.h"
#include "support/error.h"

#include <fmt/format.h>

#include <exception>

namespace popc::api::detail {

OpCall::OpCall(Graph &graph, program::Sequence &prog, std::string n, const char *fallback)
    : G(graph.impl()), name(G.uniqueName(n, fallback)), prog_(prog) {}

OpCall::~OpCall() noexcept(false) {
  if (std::uncaught_exceptions())
    return;
  takeMainSteps();
  if (!steps_.empty())
    prog_.add(deviceProgram(G, std::move(steps_)));
}

// Lowerings append their steps to the device graph's main program: move them here.
void OpCall::takeMainSteps() {
  auto &main = G.dg.main().children;
  for (auto &p : main)
    steps_.push_back(std::move(p));
  main.clear();
}

lib::Value OpCall::value(const Tensor &t) {
  G.checkMapped(t, name);
  const ir::TensorInfo info{toDType(t.elementType()), Shape(t.shape().begin(), t.shape().end())};
  if (t.regions().size() == 1 && t.regions()[0].begin == 0 &&
      t.regions()[0].count * typeSize(t.elementType()) == G.dg.tensor(t.regions()[0].var).bytes)
    return {t.regions()[0].var, info};
  if (t.numElements() == 0)
    return {G.dg.addTensor(name + "/empty", info.dtype, info.shape, graph::TensorRole::Intermediate), info};
  // A view: copy it into a tensor spread over the tiles like any op output.
  lib::Value v{G.dg.addTensor(fmt::format("{}/view{}", name, G.dg.tensors().size()), info.dtype, info.shape,
                              graph::TensorRole::Intermediate),
               info};
  G.lowering.mapLinearly(v);
  const uint32_t ex = G.dg.addExchange(name + "/view");
  G.addCopies(t, G.view(v.tensor), ex);
  takeMainSteps();
  steps_.push_back(graph::Program::exchange(ex));
  return v;
}

Tensor OpCall::result(const lib::Value &v) {
  G.dg.tensor(v.tensor).persistent = true; // the caller may read it in later programs
  std::vector<std::size_t> shape(v.info.shape.begin(), v.info.shape.end());
  return Tensor(v.tensor, toType(v.info.dtype), shape);
}

std::vector<Tensor> OpCall::op(const std::string &opType, const std::vector<Tensor> &inputs, ir::Attributes attrs,
                               int64_t opset, size_t numOutputs) {
  const lib::LowerFn *lower = lib::findLowering(opType);
  if (!lower)
    fail("{}: no lowering for {}", name, opType);
  ir::Graph g;
  g.opset = opset;
  ir::Op op;
  op.type = opType;
  op.name = name;
  op.attrs = std::move(attrs);
  const std::string prefix = fmt::format("{}#{}", name, G.counter++);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const lib::Value v = value(inputs[i]);
    ir::Tensor t;
    t.name = fmt::format("{}:in{}", prefix, i);
    t.info = v.info;
    t.kind = ir::TensorKind::Input;
    g.addTensor(t);
    g.inputs.push_back(t.name);
    op.inputs.push_back(t.name);
    G.lowering.bind(t.name, v);
  }
  for (size_t i = 0; i < numOutputs; ++i)
    op.outputs.push_back(fmt::format("{}:out{}", prefix, i));
  const ir::Op &added = g.appendOp(op);
  ir::inferAndSetOutputs(added, g);
  takeMainSteps();
  (*lower)(added, g, G.lowering);
  takeMainSteps();
  std::vector<Tensor> out;
  for (const std::string &o : added.outputs)
    out.push_back(result(G.lowering.value(o)));
  return out;
}

Tensor OpCall::elementwise(ops::Elementwise kernelOp, const std::vector<Tensor> &inputs, Type outType,
                           const std::vector<std::size_t> &outShape, const std::vector<double> &params) {
  std::vector<lib::Value> values;
  for (const Tensor &t : inputs)
    values.push_back(value(t));
  takeMainSteps();
  const ir::TensorInfo info{toDType(outType), Shape(outShape.begin(), outShape.end())};
  lib::Value out = lib::lowerElementwise(G.lowering, fmt::format("{}#{}", name, G.counter++), kernelOp, values, info,
                                         params);
  takeMainSteps();
  return result(out);
}

Tensor OpCall::scalarConstant(Type type, double value) {
  std::vector<uint8_t> bytes = [&] {
    std::vector<uint8_t> b(typeSize(type));
    auto put = [&](auto x) { std::memcpy(b.data(), &x, sizeof x); };
    switch (type) {
    case Type::FLOAT: put(float(value)); break;
    case Type::DOUBLE: put(value); break;
    case Type::INT: put(int32_t(value)); break;
    case Type::UNSIGNED_INT: put(uint32_t(value)); break;
    case Type::LONGLONG: put(int64_t(value)); break;
    case Type::UNSIGNED_LONGLONG: put(uint64_t(value)); break;
    case Type::SHORT: put(int16_t(value)); break;
    case Type::UNSIGNED_SHORT: put(uint16_t(value)); break;
    case Type::CHAR: put(int8_t(value)); break;
    case Type::UNSIGNED_CHAR: put(uint8_t(value)); break;
    case Type::BOOL: put(uint8_t(value != 0)); break;
    case Type::HALF: fail("{}: HALF scalars are not supported by the graph API yet", name);
    }
    return b;
  }();
  const graph::TensorId id = G.dg.addTensor(fmt::format("{}/const{}", name, G.dg.tensors().size()), toDType(type), {},
                                            graph::TensorRole::Constant);
  G.dg.tensor(id).constData = bytes;
  G.lowering.mapLinearly(lib::Value{id, ir::TensorInfo{toDType(type), {}}});
  return Tensor(id, type, {});
}

void OpCall::copy(const Tensor &src, const Tensor &dst) {
  if (src.numElements() != dst.numElements() || src.elementType() != dst.elementType())
    fail("{}: result {} {} does not fit {} {}", name, typeName(src.elementType()), src.shapeString(),
         typeName(dst.elementType()), dst.shapeString());
  const uint32_t ex = G.dg.addExchange(name + "/write");
  G.addCopies(src, dst, ex);
  takeMainSteps();
  steps_.push_back(graph::Program::exchange(ex));
}

} // namespace popc::api::detail
