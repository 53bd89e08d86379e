#include "compiler/passes/pass_utils.h"

#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

#include "compiler/passes/host_eval.h"
#include "support/error.h"
#include "support/log.h"

#include <cstring>
#include <algorithm>
#include <cmath>

namespace popc::passes {

bool isConstant(const ir::Graph &g, const std::string &name) {
  return g.hasTensor(name) && g.tensor(name).kind == ir::TensorKind::Constant;
}

bool isGraphOutput(const ir::Graph &g, const std::string &name) {
  return std::find(g.outputs.begin(), g.outputs.end(), name) != g.outputs.end();
}

bool isGraphInput(const ir::Graph &g, const std::string &name) {
  return std::find(g.inputs.begin(), g.inputs.end(), name) != g.inputs.end();
}

std::set<std::string> namesUsedBySubgraphs(const ir::Ir &ir) {
  std::set<std::string> names;
  for (const auto &[id, g] : ir.subgraphs)
    for (const auto &op : g.ops())
      for (const auto &in : op->inputs)
        if (!in.empty())
          names.insert(in);
  return names;
}

bool isUnused(const ir::Graph &g, const std::set<std::string> &captured, const std::string &name) {
  return g.consumers(name).empty() && !isGraphOutput(g, name) && !captured.count(name) &&
         std::none_of(g.updates.begin(), g.updates.end(),
                      [&](const ir::VariableUpdate &u) { return u.value == name || u.variable == name; });
}

std::string addConstant(ir::Graph &g, const std::string &base, ir::TensorInfo info,
                        std::vector<uint8_t> data) {
  POPC_ASSERT(data.size() == info.bytes());
  ir::Tensor t;
  t.name = g.uniqueName(base);
  t.info = std::move(info);
  t.kind = ir::TensorKind::Constant;
  t.data = std::move(data);
  return g.addTensor(std::move(t)).name;
}

std::string addFloatConstant(ir::Graph &g, const std::string &base, DType dtype, Shape shape,
                             const std::vector<double> &values) {
  ir::TensorInfo info{dtype, std::move(shape)};
  return addConstant(g, base, info, encodeDoubles(dtype, values));
}

std::string addInt64Constant(ir::Graph &g, const std::string &base, const std::vector<int64_t> &values,
                             bool scalar) {
  std::vector<uint8_t> data(values.size() * 8);
  std::memcpy(data.data(), values.data(), data.size());
  ir::TensorInfo info{DType::I64, scalar ? Shape{} : Shape{int64_t(values.size())}};
  return addConstant(g, base, info, std::move(data));
}

std::vector<double> constantAsDoubles(const ir::Tensor &t) {
  POPC_ASSERT(t.kind == ir::TensorKind::Constant);
  return decodeDoubles(t.info.dtype, t.data);
}

void removeOpAndDeadOutputs(ir::Graph &g, size_t index, const std::set<std::string> &captured) {
  std::vector<std::string> outs = g.ops()[index]->outputs;
  g.removeOp(index);
  for (const auto &o : outs)
    if (!o.empty() && g.hasTensor(o) && g.tensor(o).kind == ir::TensorKind::Intermediate &&
        !g.producer(o) && isUnused(g, captured, o))
      g.removeTensor(o);
}

size_t replaceOps(ir::Ir &ir, const std::function<bool(const ir::Graph &, const ir::Op &)> &select,
                  const std::function<size_t(ir::Graph &, size_t index, const Replaced &)> &rewrite) {
  ir::Graph &g = ir.main;
  const std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t count = 0;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    if (!isOnnxOp(*g.ops()[i]) || !select(g, *g.ops()[i]))
      continue;
    Replaced r{*g.ops()[i], {}};
    for (const std::string &o : r.op.outputs)
      if (!o.empty() && g.hasTensor(o))
        r.outputs[o] = g.tensor(o).info;
    removeOpAndDeadOutputs(g, i, captured);
    const size_t inserted = rewrite(g, i, r);
    i = i + inserted - 1; // wraps to i - 1 when nothing was inserted: the loop's ++i lands on i
    ++count;
  }
  return count;
}

size_t rewriteOpsOfType(ir::Ir &ir, const std::string &type, const char *pass,
                        const std::function<size_t(ir::Graph &, size_t, const ir::Op &, const ir::TensorInfo &)> &rewrite) {
  const size_t count = replaceOps(
      ir, [&type](const ir::Graph &, const ir::Op &op) { return op.type == type; },
      [&rewrite](ir::Graph &g, size_t i, const Replaced &r) { return rewrite(g, i, r.op, r.output(0)); });
  if (count)
    log::get("passes")->debug("{}: {} {} ops", pass, count, type);
  return count;
}

size_t indexOf(const ir::Graph &g, const ir::Op *op) {
  const auto &ops = g.ops();
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].get() == op)
      return i;
  fail("internal error: op {} not found in graph {}", op->name, g.id());
}

} // namespace popc::passes

namespace popc::passes {

std::optional<ChannelAffine> constantBatchNormAffine(const ir::Graph &g, const ir::Op &bn,
                                                     const std::set<std::string> &captured) {
  if (bn.type != "BatchNormalization" || !isOnnxOp(bn) || bn.inputs.size() != 5 ||
      bn.attrs.getInt("training_mode", 0) != 0)
    return std::nullopt;
  for (size_t i = 1; i < bn.outputs.size(); ++i)
    if (!bn.outputs[i].empty() && g.hasTensor(bn.outputs[i]) && !isUnused(g, captured, bn.outputs[i]))
      return std::nullopt; // running statistics are used: not an inference BN
  std::vector<double> p[4];
  for (int i = 0; i < 4; ++i) {
    const std::string &name = bn.inputs[size_t(i) + 1];
    if (!isConstant(g, name))
      return std::nullopt;
    DType t = g.tensor(name).info.dtype;
    if (t != DType::F32 && t != DType::F64)
      return std::nullopt;
    p[i] = constantAsDoubles(g.tensor(name));
    if (p[i].size() != p[0].size())
      return std::nullopt;
  }
  double eps = bn.attrs.getFloat("epsilon", 1e-5);
  ChannelAffine a;
  for (size_t c = 0; c < p[0].size(); ++c) {
    // y = (x - mean) / sqrt(var + eps) * scale + B
    double s = p[0][c] / std::sqrt(p[3][c] + eps);
    a.scale.push_back(s);
    a.shift.push_back(p[1][c] - p[2][c] * s);
  }
  return a;
}

std::string addInt64Tensor(ir::Graph &g, const std::string &base, Shape shape, const std::vector<int64_t> &values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(int64_t));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return addConstant(g, base, {DType::I64, std::move(shape)}, std::move(bytes));
}

std::string OpInserter::add(const std::string &type, std::vector<std::string> inputs, std::string output,
                            ir::Attributes attrs, std::string domain) {
  output = output.empty() ? g_.uniqueName(base_ + "_" + type + "_out") : std::move(output);
  return insert(type, std::move(inputs), {std::move(output)}, std::move(attrs), std::move(domain))[0];
}

const std::vector<std::string> &OpInserter::insert(const std::string &type, std::vector<std::string> inputs,
                                                   std::vector<std::string> outputs, ir::Attributes attrs,
                                                   std::string domain) {
  ir::Op op;
  op.type = type;
  op.domain = std::move(domain);
  op.name = uniqueOpName(g_, base_ + "_" + type);
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.attrs = std::move(attrs);
  op.ipu = ipu_;
  ir::inferAndSetOutputs(g_.insertOpBefore(at_++, std::move(op)), g_);
  return g_.ops()[at_ - 1]->outputs;
}

std::vector<std::string> OpInserter::addOutputs(const std::string &type, std::vector<std::string> inputs,
                                                size_t outputs, ir::Attributes attrs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < outputs; ++i)
    names.push_back(g_.uniqueName(base_ + "_" + type + "_out" + std::to_string(i))); // distinct bases: none exists yet
  return insert(type, std::move(inputs), std::move(names), std::move(attrs), "");
}

std::string OpInserter::reshape(const std::string &x, const Shape &shape, std::string output) {
  return add("Reshape", {x, addInt64Constant(g_, base_ + "_shape", shape)}, std::move(output));
}

std::string OpInserter::cast(const std::string &x, DType to, std::string output) {
  ir::Attributes a;
  a.set("to", ir::detail::onnxElementType(to));
  return add("Cast", {x}, std::move(output), a);
}

std::string OpInserter::transpose(const std::string &x, const std::vector<int64_t> &perm, std::string output) {
  ir::Attributes a;
  a.set("perm", perm);
  return add("Transpose", {x}, std::move(output), a);
}

std::string OpInserter::slice(const std::string &x, int64_t axis, int64_t begin, int64_t end, std::string output) {
  if (g_.opset >= 10)
    return add("Slice",
               {x, addInt64Constant(g_, base_ + "_starts", {begin}), addInt64Constant(g_, base_ + "_ends", {end}),
                addInt64Constant(g_, base_ + "_axes", {axis})},
               std::move(output));
  ir::Attributes a;
  a.set("starts", std::vector<int64_t>{begin});
  a.set("ends", std::vector<int64_t>{end});
  a.set("axes", std::vector<int64_t>{axis});
  return add("Slice", {x}, std::move(output), a);
}

std::string OpInserter::reduce(const std::string &type, const std::string &x, const std::vector<int64_t> &axes,
                               bool keepDims, std::string output) {
  ir::Attributes a;
  a.set("keepdims", int64_t(keepDims ? 1 : 0));
  if (g_.opset >= (type == "ReduceSum" ? 13 : 18))
    return add(type, {x, addInt64Constant(g_, base_ + "_axes", axes)}, std::move(output), a);
  a.set("axes", axes);
  return add(type, {x}, std::move(output), a);
}

std::string wrapNegativeIndices(OpInserter &ops, ir::Graph &g, const std::string &base, std::string indices,
                                const std::string &bound) {
  if (g.tensor(indices).info.dtype != DType::I64)
    indices = ops.cast(indices, DType::I64);
  const std::string zero = addInt64Constant(g, base + "_zero", {0}, true);
  return ops.add("Where", {ops.add("Less", {indices, zero}), ops.add("Add", {indices, bound}), indices});
}

std::string uniqueOpName(const ir::Graph &g, const std::string &base) {
  std::set<std::string> used;
  for (const auto &op : g.ops())
    used.insert(op->name);
  std::string name = base;
  for (int i = 1; used.count(name); ++i)
    name = base + "_" + std::to_string(i);
  return name;
}

} // namespace popc::passes
