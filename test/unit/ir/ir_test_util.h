// The one set of graph builders for the IR and pass unit tests (the passes
// tests reach them through test/unit/passes/test_graph.h). A graph can also
// be written as IR text (fromText), as the golden tests in test/filecheck are.
#pragma once
#include "compiler/ir/op_registry.h"
#include "compiler/ir/parser.h"
#include "support/error.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <string>
#include <vector>

namespace popc::ir::test {

inline Tensor &addInput(Graph &g, const std::string &name, Shape shape, DType dt = DType::F32) {
  Tensor t;
  t.name = name;
  t.info = {dt, std::move(shape)};
  t.kind = TensorKind::Input;
  g.inputs.push_back(name);
  return g.addTensor(std::move(t));
}

inline Tensor makeConst(const std::string &name, const std::vector<int64_t> &values, Shape shape = {}) {
  Tensor t;
  t.name = name;
  t.info = {DType::I64, shape.empty() ? Shape{int64_t(values.size())} : shape};
  t.kind = TensorKind::Constant;
  t.data.resize(values.size() * 8);
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

inline Tensor &addConstInts(Graph &g, const std::string &name, const std::vector<int64_t> &values) {
  return g.addTensor(makeConst(name, values));
}

inline Tensor &addConstF32(Graph &g, const std::string &name, Shape shape) {
  Tensor t;
  t.name = name;
  t.info = {DType::F32, std::move(shape)};
  t.kind = TensorKind::Constant;
  t.data.assign(t.info.bytes(), 0);
  return g.addTensor(std::move(t));
}

inline Op makeOp(const std::string &type, const std::string &name, std::vector<std::string> inputs,
                 std::vector<std::string> outputs = {"y"}) {
  Op op;
  op.type = type;
  op.name = name;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  return op;
}

// Appends `op`, infers it, returns its first output's info.
inline TensorInfo infer(Graph &g, Op op) {
  Op &added = g.appendOp(std::move(op));
  inferAndSetOutputs(added, g);
  return g.tensor(added.outputs[0]).info;
}

inline Shape inferShape(Graph &g, Op op) { return infer(g, std::move(op)).shape; }

// A constant of any element type from its values.
template <typename T>
inline Tensor &addConst(Graph &g, const std::string &name, Shape shape, const std::vector<T> &v, DType t) {
  Tensor c;
  c.name = name;
  c.info = {t, std::move(shape)};
  c.kind = TensorKind::Constant;
  c.data.resize(v.size() * sizeof(T));
  if (!v.empty())
    std::memcpy(c.data.data(), v.data(), c.data.size());
  return g.addTensor(std::move(c));
}
inline Tensor &addF32(Graph &g, const std::string &name, Shape shape, const std::vector<float> &v) {
  return addConst(g, name, std::move(shape), v, DType::F32);
}
inline Tensor &addI64(Graph &g, const std::string &name, Shape shape, const std::vector<int64_t> &v) {
  return addConst(g, name, std::move(shape), v, DType::I64);
}

// Appends an op and infers its outputs.
inline Op &addOp(Graph &g, const std::string &type, const std::string &name, std::vector<std::string> inputs,
                 std::vector<std::string> outputs, Attributes attrs = {}) {
  Op op = makeOp(type, name, std::move(inputs), std::move(outputs));
  op.attrs = std::move(attrs);
  Op &added = g.appendOp(std::move(op));
  inferAndSetOutputs(added, g);
  return added;
}

template <typename T> std::vector<T> values(const Tensor &t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), t.data.data(), v.size() * sizeof(T));
  return v;
}

inline std::vector<std::string> opTypes(const Graph &g) {
  std::vector<std::string> types;
  for (const auto &op : g.ops())
    types.push_back(op->type);
  return types;
}

// An IR written as text (docs/ir-text.md), inferred and verified.
inline Ir fromText(const std::string &text) {
  Ir ir = parseIr(text, "test.ir");
  inferGraph(ir.main);
  verifyGraph(ir.main);
  return ir;
}

} // namespace popc::ir::test
