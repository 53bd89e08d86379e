// Small builders for IR unit tests.
#pragma once
#include "compiler/ir/op_registry.h"
#include "support/error.h"

#include <catch2/catch.hpp>
#include <cstring>

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

} // namespace popc::ir::test
