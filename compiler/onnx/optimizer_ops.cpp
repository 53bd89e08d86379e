// ai.onnx.preview.training Adagrad, Momentum and Adam: one training step's
// weight update, elementwise. Each node is replaced by the ai.onnx nodes of
// its formula (ONNX's operator spec, the same as onnx/backend/test/case/node/
// {adagrad,momentum,adam}.py), so the update runs on the device like any
// other op. The step count T stays a run-time input: "T > 0" is a Where, and
// Adam's bias correction a Pow of T.
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"

#include <fmt/format.h>

namespace popc::onnx::detail {

namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

const char *kTrainingDomain = "ai.onnx.preview.training";
constexpr float kEpsilonDefault = 1e-6f; // Adagrad's and Adam's schema default

bool isOptimizer(const NodeProto &n) {
  return n.domain() == kTrainingDomain && (n.op_type() == "Adagrad" || n.op_type() == "Momentum" || n.op_type() == "Adam");
}

// The ONNX element type of `name` as the graph states it (input, initializer
// or value_info); FLOAT when it is not stated.
int32_t elemTypeOf(const GraphProto &g, const std::string &name) {
  for (const auto &v : g.input())
    if (v.name() == name && v.type().tensor_type().elem_type())
      return v.type().tensor_type().elem_type();
  for (const auto &t : g.initializer())
    if (t.name() == name)
      return t.data_type();
  for (const auto &v : g.value_info())
    if (v.name() == name && v.type().tensor_type().elem_type())
      return v.type().tensor_type().elem_type();
  return ::onnx::TensorProto::FLOAT;
}

// Emits the replacement nodes of one optimizer node into `out`.
class UpdateBuilder {
public:
  UpdateBuilder(const NodeProto &node, const std::string &name, int32_t elemType, GraphProto &out,
                const std::string &path)
      : node_(node), name_(name), elemType_(elemType), out_(out), path_(path) {}

  float attr(const char *key, float fallback) const {
    for (const auto &a : node_.attribute())
      if (a.name() == key)
        return a.f();
    return fallback;
  }
  std::string mode() const {
    for (const auto &a : node_.attribute())
      if (a.name() == "mode")
        return a.s();
    return "standard";
  }

  std::string emit(const std::string &type, const std::vector<std::string> &inputs, std::string output = "") {
    if (output.empty())
      output = fmt::format("{}/{}{}", name_, type, counter_++);
    NodeProto &n = appendNode(out_, type, output + "/" + type, inputs, {output});
    if (type == "Cast")
      addIntAttr(n, "to", elemType_);
    return output;
  }
  // A scalar constant of the weights' element type.
  std::string scalar(double value) {
    const std::string output = fmt::format("{}/const{}", name_, counter_++);
    ::onnx::TensorProto &t = appendConstant(out_, output);
    t.set_data_type(elemType_);
    if (elemType_ == ::onnx::TensorProto::DOUBLE)
      t.add_double_data(value);
    else
      t.add_float_data(float(value));
    return output;
  }
  std::string mul(const std::string &a, const std::string &b) { return emit("Mul", {a, b}); }
  std::string add(const std::string &a, const std::string &b) { return emit("Add", {a, b}); }
  std::string sub(const std::string &a, const std::string &b) { return emit("Sub", {a, b}); }
  std::string div(const std::string &a, const std::string &b) { return emit("Div", {a, b}); }

  // norm_coefficient * X + G
  std::string regularized(const std::string &x, const std::string &g) {
    return add(mul(scalar(attr("norm_coefficient", 0.f)), x), g);
  }
  // T as the weights' type, and "T > 0" (T is int64).
  std::string stepCount() { return emit("Cast", {node_.input(1)}); }
  std::string stepPositive() {
    const std::string zero = fmt::format("{}/zero{}", name_, counter_++);
    appendIntConstant(out_, zero, {0}, true);
    return emit("Greater", {node_.input(1), zero});
  }

  void adagrad(int n) {
    // r = R / (1 + T * decay_factor)
    const std::string r =
        div(node_.input(0), add(scalar(1.0), mul(stepCount(), scalar(attr("decay_factor", 0.f)))));
    const std::string epsilon = scalar(attr("epsilon", kEpsilonDefault));
    for (int i = 0; i < n; ++i) {
      const std::string x = node_.input(2 + i), g = node_.input(2 + n + i), h = node_.input(2 + 2 * n + i);
      const std::string gr = regularized(x, g);
      const std::string hNew = emit("Add", {h, mul(gr, gr)}, output(n + i));
      const std::string hAdaptive = add(emit("Sqrt", {hNew}), epsilon);
      emit("Sub", {x, div(mul(r, gr), hAdaptive)}, output(i));
    }
  }

  void momentum(int n) {
    const std::string m = mode();
    if (m != "standard" && m != "nesterov")
      fail("{}: Momentum node '{}': mode '{}' is not 'standard' or 'nesterov'", path_, name_, m);
    const std::string alpha = scalar(attr("alpha", 0.f));
    // beta_adjusted = T > 0 ? beta : 1
    const std::string beta = emit("Where", {stepPositive(), scalar(attr("beta", 0.f)), scalar(1.0)});
    for (int i = 0; i < n; ++i) {
      const std::string x = node_.input(2 + i), g = node_.input(2 + n + i), v = node_.input(2 + 2 * n + i);
      const std::string gr = regularized(x, g);
      const std::string vNew = emit("Add", {mul(alpha, v), mul(beta, gr)}, output(n + i));
      const std::string step = m == "standard" ? vNew : add(gr, mul(alpha, vNew));
      emit("Sub", {x, mul(node_.input(0), step)}, output(i));
    }
  }

  void adam(int n) {
    const float alphaValue = attr("alpha", 0.9f), betaValue = attr("beta", 0.999f);
    const std::string alpha = scalar(alphaValue), beta = scalar(betaValue), one = scalar(1.0);
    const std::string epsilon = scalar(attr("epsilon", kEpsilonDefault));
    // R_adjusted = T > 0 ? R * sqrt(1 - beta^T) / (1 - alpha^T) : R
    const std::string t = stepCount();
    const std::string corrected =
        div(mul(node_.input(0), emit("Sqrt", {sub(one, emit("Pow", {beta, t}))})), sub(one, emit("Pow", {alpha, t})));
    const std::string r = emit("Where", {stepPositive(), corrected, node_.input(0)});
    const std::string keep = scalar(1.0 - double(attr("norm_coefficient_post", 0.f)));
    for (int i = 0; i < n; ++i) {
      const std::string x = node_.input(2 + i), g = node_.input(2 + n + i), v = node_.input(2 + 2 * n + i),
                        h = node_.input(2 + 3 * n + i);
      const std::string gr = regularized(x, g);
      const std::string vNew =
          emit("Add", {mul(alpha, v), mul(scalar(1.0 - double(alphaValue)), gr)}, output(n + i));
      const std::string hNew =
          emit("Add", {mul(beta, h), mul(scalar(1.0 - double(betaValue)), mul(gr, gr))}, output(2 * n + i));
      const std::string hSqrt = add(emit("Sqrt", {hNew}), epsilon);
      emit("Mul", {keep, sub(x, mul(r, div(vNew, hSqrt)))}, output(i));
    }
  }

private:
  // Output k of the node, or a scratch name when the model leaves it out.
  std::string output(int k) {
    return k < node_.output_size() && !node_.output(k).empty() ? node_.output(k)
                                                                : fmt::format("{}/unused{}", name_, counter_++);
  }

  const NodeProto &node_;
  std::string name_;
  int32_t elemType_;
  GraphProto &out_;
  const std::string &path_;
  int counter_ = 0;
};

} // namespace

int expandOptimizerOps(::onnx::ModelProto &model, const std::string &path) {
  GraphProto &graph = *model.mutable_graph();
  int expanded = 0;
  GraphProto rebuilt;
  for (int i = 0; i < graph.node_size(); ++i) {
    const NodeProto &node = graph.node(i);
    if (!isOptimizer(node)) {
      *rebuilt.add_node() = node;
      continue;
    }
    const std::string name = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
    const int perWeight = node.op_type() == "Adam" ? 4 : 3; // X, G and the state tensors
    const int n = (node.input_size() - 2) / perWeight;
    if (node.input_size() < 2 + perWeight || (node.input_size() - 2) % perWeight != 0)
      fail("{}: {} node '{}' has {} inputs; it takes R, T and {} tensors per weight", path, node.op_type(), name,
           node.input_size(), perWeight);
    UpdateBuilder b(node, name, elemTypeOf(graph, node.input(2)), rebuilt, path);
    if (node.op_type() == "Adagrad")
      b.adagrad(n);
    else if (node.op_type() == "Momentum")
      b.momentum(n);
    else
      b.adam(n);
    ++expanded;
  }
  if (!expanded)
    return 0;
  graph.clear_node();
  for (auto &n : *rebuilt.mutable_node())
    *graph.add_node() = std::move(n);
  // The replacement uses ai.onnx ops: a model that imported only the training
  // domain gets the ai.onnx opset whose semantics they were written for.
  if (aiOnnxOpset(model, path) == 0) {
    auto *imp = model.add_opset_import();
    imp->set_domain("");
    imp->set_version(13);
  }
  return expanded;
}

} // namespace popc::onnx::detail
