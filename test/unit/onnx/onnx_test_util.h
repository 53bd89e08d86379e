// Builds small ONNX models with the protobuf API into a temporary directory.
#pragma once
#include "support/error.h"
#include "test/unit/temp_dir.h"

#include <catch2/catch.hpp>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>
#include <vector>

namespace popc::onnx::test {

namespace fs = std::filesystem;

using popc::test::TempDir; // test/unit/temp_dir.h

using Dim = std::variant<int64_t, std::string>; // fixed value or symbolic name

inline ::onnx::ModelProto makeModel(int64_t opset = 13) {
  ::onnx::ModelProto m;
  m.set_ir_version(7);
  m.set_producer_name("popc-test");
  auto *imp = m.add_opset_import();
  imp->set_domain("");
  imp->set_version(opset);
  m.mutable_graph()->set_name("test_graph");
  return m;
}

inline void setType(::onnx::ValueInfoProto *vi, const std::string &name, int elemType,
                    const std::vector<Dim> &dims, bool withShape = true) {
  vi->set_name(name);
  auto *tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elemType);
  if (!withShape)
    return;
  auto *shape = tt->mutable_shape();
  for (const auto &d : dims) {
    auto *dim = shape->add_dim();
    if (auto *v = std::get_if<int64_t>(&d))
      dim->set_dim_value(*v);
    else
      dim->set_dim_param(std::get<std::string>(d));
  }
}

inline void addInput(::onnx::ModelProto &m, const std::string &name, const std::vector<Dim> &dims,
                     int elemType = ::onnx::TensorProto::FLOAT) {
  setType(m.mutable_graph()->add_input(), name, elemType, dims);
}

inline void addOutput(::onnx::ModelProto &m, const std::string &name,
                      int elemType = ::onnx::TensorProto::FLOAT) {
  setType(m.mutable_graph()->add_output(), name, elemType, {}, false);
}

inline ::onnx::TensorProto floatTensor(const std::string &name, const std::vector<int64_t> &dims,
                                       const std::vector<float> &values, bool raw = true) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims)
    t.add_dims(d);
  if (raw)
    t.set_raw_data(std::string(reinterpret_cast<const char *>(values.data()), values.size() * 4));
  else
    for (float v : values)
      t.add_float_data(v);
  return t;
}

inline ::onnx::TensorProto int64Tensor(const std::string &name, const std::vector<int64_t> &values) {
  ::onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(::onnx::TensorProto::INT64);
  t.add_dims(int64_t(values.size()));
  for (int64_t v : values)
    t.add_int64_data(v);
  return t;
}

inline ::onnx::NodeProto *addNode(::onnx::ModelProto &m, const std::string &type,
                                  const std::vector<std::string> &inputs,
                                  const std::vector<std::string> &outputs, const std::string &name = "",
                                  const std::string &domain = "") {
  auto *n = m.mutable_graph()->add_node();
  n->set_op_type(type);
  n->set_name(name);
  n->set_domain(domain);
  for (const auto &i : inputs)
    n->add_input(i);
  for (const auto &o : outputs)
    n->add_output(o);
  return n;
}

inline void setIntAttr(::onnx::NodeProto *n, const std::string &name, int64_t v) {
  auto *a = n->add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

inline std::string save(const ::onnx::ModelProto &m, const std::string &path) {
  std::ofstream out(path, std::ios::binary);
  m.SerializeToOstream(&out);
  return path;
}

inline void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

// Y = X·Wᵀ + B with X [batch,3] (batch may be symbolic), W [4,3], B [4].
inline ::onnx::ModelProto gemmModel(Dim batch = int64_t(2)) {
  auto m = makeModel();
  addInput(m, "X", {batch, int64_t(3)});
  std::vector<float> w(12);
  for (int i = 0; i < 12; ++i)
    w[size_t(i)] = float(i);
  *m.mutable_graph()->add_initializer() = floatTensor("W", {4, 3}, w);
  *m.mutable_graph()->add_initializer() = floatTensor("B", {4}, {1, 2, 3, 4}, /*raw=*/false);
  auto *n = addNode(m, "Gemm", {"X", "W", "B"}, {"Y"}, "gemm0");
  setIntAttr(n, "transB", 1);
  addOutput(m, "Y");
  return m;
}

} // namespace popc::onnx::test
