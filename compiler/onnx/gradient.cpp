// ai.onnx.preview.training Gradient: reverse-mode autodiff at import. Each
// Gradient node (xs, y[, zs]) is replaced by the ONNX nodes that compute
// dy/dx_i for a seed gradient of ones. The derivative is the IR's own
// (ir::appendGradients over the forward nodes between the xs and y, with the
// gradient rule each op declares beside its shape rule, e.g. in
// compiler/ops/elementwise.def); its backward ops are written back as ONNX
// nodes, so they go through the same import, passes and lowerings as the
// forward ones (PopART also builds its backward graph from ordinary ops).
#include "compiler/ir/autodiff.h"
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"
#include "support/log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

namespace popc::onnx::detail {

namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

const char *kTrainingDomain = "ai.onnx.preview.training";

bool isGradient(const NodeProto &n) { return n.domain() == kTrainingDomain && n.op_type() == "Gradient"; }

void fillTensor(::onnx::TensorProto &t, const ir::Tensor &value) {
  t.set_data_type(dtypeToOnnx(value.info.dtype));
  for (int64_t d : value.info.shape)
    t.add_dims(d);
  t.set_raw_data(std::string(value.data.begin(), value.data.end()));
}

void addAttribute(NodeProto &n, const std::string &name, const ir::AttrValue &value) {
  using A = ::onnx::AttributeProto;
  A &a = *n.add_attribute();
  a.set_name(name);
  std::visit(
      [&](const auto &v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) {
          a.set_type(A::INT);
          a.set_i(v);
        } else if constexpr (std::is_same_v<T, double>) {
          a.set_type(A::FLOAT);
          a.set_f(float(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          a.set_type(A::STRING);
          a.set_s(v);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          a.set_type(A::INTS);
          for (int64_t x : v)
            a.add_ints(x);
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
          a.set_type(A::FLOATS);
          for (double x : v)
            a.add_floats(float(x));
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          a.set_type(A::STRINGS);
          for (const std::string &x : v)
            a.add_strings(x);
        } else {
          a.set_type(A::TENSOR);
          fillTensor(*a.mutable_t(), *v);
        }
      },
      value);
}

// Differentiates y for the xs on `forward` (the imported forward nodes) and
// appends the backward nodes to `out`, ending in one Identity per output of
// the Gradient node. Names the backward pass makes get the node's name as a
// prefix, so two Gradient nodes never collide.
void buildBackward(const NodeProto &grad, const std::string &name, ir::Ir forward, const std::set<std::string> &onnxNames,
                   const std::vector<std::string> &xs, const std::string &y, GraphProto &out, const std::string &path) {
  ir::Graph &g = forward.main;
  const size_t forwardOps = g.ops().size();
  ir::GradientOptions options;
  options.loss = y;
  options.wrt = xs;
  options.anyLossShape = true;
  options.zeroForUnreachable = true;
  std::map<std::string, std::string> grads;
  try {
    grads = ir::appendGradients(g, options);
  } catch (const Error &e) {
    fail("{}: Gradient node '{}': {}", path, name, e.what());
  }
  std::map<std::string, std::string> renamed;
  auto onnxName = [&](const std::string &tensor) -> const std::string & {
    if (tensor.empty() || onnxNames.count(tensor))
      return tensor;
    auto it = renamed.find(tensor);
    if (it != renamed.end())
      return it->second;
    const std::string fresh = fmt::format("{}/{}", name, tensor);
    const ir::Tensor &t = g.tensor(tensor);
    if (ir::hasData(t.kind)) // a constant the backward pass (or the import) made
      fillTensor(appendConstant(out, fresh), t);
    return renamed.emplace(tensor, fresh).first->second;
  };
  for (size_t i = forwardOps; i < g.ops().size(); ++i) {
    const ir::Op &op = *g.ops()[i];
    std::vector<std::string> inputs, outputs;
    for (const std::string &in : op.inputs)
      inputs.push_back(onnxName(in));
    for (const std::string &o : op.outputs)
      outputs.push_back(onnxName(o));
    NodeProto &n = appendNode(out, op.type, fmt::format("{}/{}", name, op.name), inputs, outputs);
    if (!op.domain.empty())
      n.set_domain(op.domain);
    for (const auto &[attr, value] : op.attrs.all())
      addAttribute(n, attr, value);
  }
  for (size_t k = 0; k < xs.size(); ++k)
    if (!grad.output(int(k)).empty())
      appendNode(out, "Identity", grad.output(int(k)) + "/Identity", {onnxName(grads.at(xs[k]))}, {grad.output(int(k))});
}

std::vector<std::string> stringsAttr(const NodeProto &n, const char *name) {
  for (const auto &a : n.attribute())
    if (a.name() == name)
      return {a.strings().begin(), a.strings().end()};
  return {};
}

} // namespace

int expandGradients(::onnx::ModelProto &model, const ForwardImporter &importForward, const std::string &path) {
  GraphProto &graph = *model.mutable_graph();
  std::vector<int> gradients;
  for (int i = 0; i < graph.node_size(); ++i)
    if (isGradient(graph.node(i)))
      gradients.push_back(i);
  if (gradients.empty())
    return 0;
  std::map<std::string, int> producer;
  for (int i = 0; i < graph.node_size(); ++i)
    for (const auto &o : graph.node(i).output())
      producer[o] = i;
  const std::set<std::string> onnxNames = definedNames(graph); // `graph` is only read below
  std::vector<bool> emitted(size_t(graph.node_size()), false);
  GraphProto rebuilt;
  for (int i = 0; i < graph.node_size(); ++i) {
    const NodeProto &node = graph.node(i);
    if (emitted[size_t(i)])
      continue;
    if (!isGradient(node)) {
      *rebuilt.add_node() = node;
      emitted[size_t(i)] = true;
      continue;
    }
    const std::string name = node.name().empty() ? fmt::format("Gradient_{}", i) : node.name();
    const auto xs = stringsAttr(node, "xs"), zs = stringsAttr(node, "zs");
    std::string y;
    for (const auto &a : node.attribute())
      if (a.name() == "y")
        y = a.s();
    if (xs.empty() || y.empty())
      fail("{}: Gradient node '{}': attributes 'xs' and 'y' are required", path, name);
    if (node.output_size() != int(xs.size()))
      fail("{}: Gradient node '{}': {} outputs for {} xs (one gradient per x)", path, name, node.output_size(),
           xs.size());
    if (node.input_size() != int(xs.size() + zs.size()))
      fail("{}: Gradient node '{}': inputs must be xs then zs ({} names), it has {}", path, name,
           xs.size() + zs.size(), node.input_size());
    for (size_t k = 0; k < xs.size(); ++k)
      if (node.input(int(k)) != xs[k])
        fail("{}: Gradient node '{}': input {} is '{}' but xs[{}] is '{}'", path, name, k, node.input(int(k)), k,
             xs[k]);
    // The nodes y is computed from (never through a Gradient node), in order.
    std::set<int> needed;
    std::vector<std::string> todo{y};
    std::set<std::string> seen;
    while (!todo.empty()) {
      const std::string t = todo.back();
      todo.pop_back();
      if (t.empty() || !seen.insert(t).second)
        continue;
      auto p = producer.find(t);
      if (p == producer.end())
        continue;
      if (isGradient(graph.node(p->second)))
        fail("{}: Gradient node '{}': y '{}' is computed from another Gradient node's output", path, name, y);
      if (needed.insert(p->second).second)
        for (const auto &in : graph.node(p->second).input())
          todo.push_back(in);
    }
    ::onnx::ModelProto forwardModel = model;
    GraphProto *fg = forwardModel.mutable_graph();
    fg->clear_node();
    for (int k : needed)
      *fg->add_node() = graph.node(k);
    fg->clear_output();
    fg->add_output()->set_name(y);
    ir::Ir forwardIr = importForward(forwardModel);
    // y's nodes may come after the Gradient node: they go first.
    for (int k : needed)
      if (!emitted[size_t(k)]) {
        *rebuilt.add_node() = graph.node(k);
        emitted[size_t(k)] = true;
      }
    buildBackward(node, name, std::move(forwardIr), onnxNames, xs, y, rebuilt, path);
    emitted[size_t(i)] = true;
    log::get("onnx")->debug("{}: Gradient '{}': d{}/d({}) built by reverse-mode autodiff", path, name, y,
                            fmt::join(xs, ", "));
  }
  checkExpandedSize(rebuilt.node_size(), "building Gradient nodes", path);
  graph.clear_node();
  for (auto &n : *rebuilt.mutable_node())
    *graph.add_node() = std::move(n);
  return int(gradients.size());
}

} // namespace popc::onnx::detail
