// Builders for the ONNX nodes the import-time rewrites emit (control flow,
// sequences, Gradient, optimizer steps): one spelling of node, attribute and
// Constant-value construction.
#include "compiler/onnx/onnx_internal.h"

namespace popc::onnx::detail {

::onnx::NodeProto &appendNode(::onnx::GraphProto &graph, const std::string &type, const std::string &name,
                              const std::vector<std::string> &inputs, const std::vector<std::string> &outputs) {
  ::onnx::NodeProto &n = *graph.add_node();
  n.set_op_type(type);
  n.set_name(name);
  for (const auto &i : inputs)
    n.add_input(i);
  for (const auto &o : outputs)
    n.add_output(o);
  return n;
}

void addIntAttr(::onnx::NodeProto &n, const char *name, int64_t value) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}

void addIntsAttr(::onnx::NodeProto &n, const char *name, const std::vector<int64_t> &values) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values)
    a->add_ints(v);
}

::onnx::TensorProto &appendConstant(::onnx::GraphProto &graph, const std::string &output) {
  ::onnx::NodeProto &c = appendNode(graph, "Constant", output + "/Constant", {}, {output});
  auto *a = c.add_attribute();
  a->set_name("value");
  a->set_type(::onnx::AttributeProto::TENSOR);
  return *a->mutable_t();
}

::onnx::TensorProto &appendIntConstant(::onnx::GraphProto &graph, const std::string &output,
                                       const std::vector<int64_t> &values, bool scalar) {
  ::onnx::TensorProto &t = appendConstant(graph, output);
  t.set_data_type(::onnx::TensorProto::INT64);
  if (!scalar)
    t.add_dims(int64_t(values.size()));
  for (int64_t v : values)
    t.add_int64_data(v);
  return t;
}

} // namespace popc::onnx::detail
