// Helpers to build small IR graphs directly in tests.
#pragma once
#include "compiler/ir/ir.h"
#include "compiler/ir/op_registry.h"

#include <cstring>
#include <string>
#include <vector>

namespace popc::passes::test {

inline void addInput(ir::Graph &g, const std::string &name, Shape shape, DType t = DType::F32) {
  ir::Tensor x;
  x.name = name;
  x.info = {t, std::move(shape)};
  x.kind = ir::TensorKind::Input;
  g.addTensor(std::move(x));
  g.inputs.push_back(name);
}

template <typename T>
inline void addConst(ir::Graph &g, const std::string &name, Shape shape, const std::vector<T> &v,
                     DType t) {
  ir::Tensor c;
  c.name = name;
  c.info = {t, std::move(shape)};
  c.kind = ir::TensorKind::Constant;
  c.data.resize(v.size() * sizeof(T));
  std::memcpy(c.data.data(), v.data(), c.data.size());
  g.addTensor(std::move(c));
}
inline void addF32(ir::Graph &g, const std::string &name, Shape shape, const std::vector<float> &v) {
  addConst(g, name, std::move(shape), v, DType::F32);
}
inline void addI64(ir::Graph &g, const std::string &name, Shape shape,
                   const std::vector<int64_t> &v) {
  addConst(g, name, std::move(shape), v, DType::I64);
}

inline ir::Op &addOp(ir::Graph &g, const std::string &type, const std::string &name,
                     std::vector<std::string> inputs, std::vector<std::string> outputs,
                     ir::Attributes attrs = {}) {
  ir::Op op;
  op.type = type;
  op.name = name;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.attrs = std::move(attrs);
  ir::Op &added = g.appendOp(std::move(op));
  ir::inferAndSetOutputs(added, g);
  return added;
}

template <typename T> std::vector<T> values(const ir::Tensor &t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(T));
  return v;
}

inline std::vector<std::string> opTypes(const ir::Graph &g) {
  std::vector<std::string> types;
  for (const auto &op : g.ops())
    types.push_back(op->type);
  return types;
}

} // namespace popc::passes::test
