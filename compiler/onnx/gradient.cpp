// ai.onnx.preview.training Gradient: reverse-mode autodiff at import. Each
// Gradient node (xs, y[, zs]) is replaced by the ONNX nodes that compute
// dy/dx_i for a seed gradient of ones, built backwards over the forward nodes
// between the xs and y. Broadcast inputs get their gradient summed back to
// their own shape (ReduceSum keepdims + Reshape). This runs on the ONNX graph,
// like the If/Loop and sequence resolution, so the gradient nodes then go
// through the same import, passes and lowerings as the forward ones (PopART
// also builds its backward graph from ordinary ops).
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

const std::set<std::string> kDifferentiable = {"Add", "Sub",  "Mul",  "Div", "Neg", "Identity",
                                               "Relu", "Sigmoid", "Tanh", "Exp", "Log", "MatMul"};

// Builds the backward nodes of one Gradient node into `out`.
class GradientBuilder {
public:
  GradientBuilder(const NodeProto &grad, const std::string &name, int64_t opset,
                  const std::map<std::string, ir::TensorInfo> &infos, GraphProto &out, const std::string &path)
      : grad_(grad), name_(name), opset_(opset), infos_(infos), out_(out), path_(path) {}

  // `forward`: the nodes y is computed from, in graph order.
  void build(const std::vector<const NodeProto *> &forward, const std::vector<std::string> &xs,
             const std::string &y) {
    const std::set<std::string> xset(xs.begin(), xs.end());
    // Nodes on a path from some x to y; a node that produces an x is outside
    // the differentiated sub-graph (the xs are its inputs).
    std::set<std::string> depends(xs.begin(), xs.end());
    std::vector<const NodeProto *> active;
    for (const NodeProto *n : forward) {
      bool producesX = false, usesX = false;
      for (const auto &o : n->output())
        producesX |= xset.count(o) > 0;
      for (const auto &i : n->input())
        usesX |= depends.count(i) > 0;
      if (producesX || !usesX)
        continue;
      active.push_back(n);
      for (const auto &o : n->output())
        depends.insert(o);
    }
    const ir::TensorInfo &yInfo = info(y);
    requireFloat(y, yInfo);
    grads_[y] = constant(yInfo.dtype, yInfo.shape, 1.0, "seed");
    for (auto it = active.rbegin(); it != active.rend(); ++it) {
      const NodeProto &n = **it;
      auto g = grads_.find(n.output_size() ? n.output(0) : "");
      if (g == grads_.end())
        continue; // does not reach y
      backward(n, g->second, depends);
    }
    for (int i = 0; i < grad_.output_size(); ++i) {
      const std::string &outName = grad_.output(i);
      if (outName.empty())
        continue;
      const ir::TensorInfo &xInfo = info(xs[size_t(i)]);
      if (auto g = grads_.find(xs[size_t(i)]); g != grads_.end()) {
        emit("Identity", {g->second}, outName);
      } else { // y does not depend on this x
        requireFloat(xs[size_t(i)], xInfo);
        constantNode(xInfo.dtype, xInfo.shape, 0.0, outName);
      }
    }
  }

private:
  const ir::TensorInfo &info(const std::string &tensor) {
    auto it = infos_.find(tensor);
    if (it == infos_.end())
      fail("{}: Gradient node '{}': the type and shape of '{}' are unknown", path_, name_, tensor);
    return it->second;
  }

  void requireFloat(const std::string &tensor, const ir::TensorInfo &i) {
    if (!isFloatingPoint(i.dtype))
      fail("{}: Gradient node '{}': '{}' is {}; gradients need floating-point tensors", path_, name_, tensor,
           dtypeName(i.dtype));
  }

  std::string fresh(const std::string &what) { return fmt::format("{}/grad/{}{}", name_, what, counter_++); }

  NodeProto &emitNode(const std::string &type, const std::vector<std::string> &inputs, const std::string &output) {
    return appendNode(out_, type, output + "/" + type, inputs, {output});
  }

  std::string emit(const std::string &type, const std::vector<std::string> &inputs, std::string output = "") {
    if (output.empty())
      output = fresh(type);
    emitNode(type, inputs, output);
    return output;
  }

  void constantNode(DType dtype, const Shape &shape, double value, const std::string &output) {
    ::onnx::TensorProto *t = &appendConstant(out_, output);
    for (int64_t d : shape)
      t->add_dims(d);
    const size_t n = size_t(numElements(shape));
    std::string raw;
    auto fill = [&](auto v, int onnxType) {
      t->set_data_type(onnxType);
      for (size_t i = 0; i < n; ++i)
        raw.append(reinterpret_cast<const char *>(&v), sizeof v);
    };
    switch (dtype) {
    case DType::F32: fill(float(value), ::onnx::TensorProto::FLOAT); break;
    case DType::F64: fill(double(value), ::onnx::TensorProto::DOUBLE); break;
    case DType::F16: fill(uint16_t(value == 1.0 ? 0x3C00 : 0), ::onnx::TensorProto::FLOAT16); break;
    case DType::BF16: fill(uint16_t(value == 1.0 ? 0x3F80 : 0), ::onnx::TensorProto::BFLOAT16); break;
    case DType::I64: fill(int64_t(value), ::onnx::TensorProto::INT64); break;
    default: fail("{}: Gradient node '{}': no {} constants", path_, name_, dtypeName(dtype));
    }
    t->set_raw_data(raw);
  }

  std::string constant(DType dtype, const Shape &shape, double value, const std::string &what) {
    const std::string out = fresh(what);
    constantNode(dtype, shape, value, out);
    return out;
  }

  std::string ints(const std::vector<int64_t> &values) {
    const std::string out = fresh("ints");
    appendIntConstant(out_, out, values);
    return out;
  }

  std::string reshape(const std::string &g, const Shape &to) { return emit("Reshape", {g, ints(to)}); }

  // `g` (shape gShape) summed over the axes it was broadcast along, to reach
  // `target` (right-aligned with gShape), then reshaped to `final`.
  std::string unbroadcast(const std::string &g, const Shape &gShape, const Shape &target, const Shape &final) {
    const size_t lead = gShape.size() - target.size();
    std::vector<int64_t> axes;
    Shape reduced = gShape;
    for (size_t d = 0; d < gShape.size(); ++d)
      if (d < lead || (target[d - lead] == 1 && gShape[d] != 1)) {
        axes.push_back(int64_t(d));
        reduced[d] = 1;
      }
    std::string r = g;
    if (!axes.empty()) {
      if (opset_ >= 13) {
        r = emit("ReduceSum", {g, ints(axes)});
      } else {
        r = fresh("ReduceSum");
        addIntsAttr(emitNode("ReduceSum", {g}, r), "axes", axes);
      }
    }
    return reduced == final ? r : reshape(r, final);
  }

  void accumulate(const std::string &tensor, const std::string &g) {
    auto [it, fresh] = grads_.emplace(tensor, g);
    if (!fresh)
      it->second = emit("Add", {it->second, g});
  }

  void backward(const NodeProto &n, const std::string &g, const std::set<std::string> &depends) {
    const std::string &type = n.op_type();
    const bool aiOnnx = n.domain().empty() || n.domain() == "ai.onnx";
    if (!aiOnnx || !kDifferentiable.count(type) || n.output_size() != 1)
      fail("{}: Gradient node '{}' cannot differentiate through {} node '{}' (popc differentiates {})", path_,
           name_, aiOnnx ? type : n.domain() + "::" + type, n.name(), fmt::join(kDifferentiable, ", "));
    const std::string &y = n.output(0);
    const ir::TensorInfo &yInfo = info(y);
    requireFloat(y, yInfo);
    auto wants = [&](int i) { return n.input_size() > i && depends.count(n.input(i)) > 0; };
    auto in = [&](int i) -> const std::string & { return n.input(i); };
    auto shapeOf = [&](int i) -> const Shape & { return info(in(i)).shape; };
    // Elementwise binary: the gradient term for input i has the output's shape.
    auto toInput = [&](int i, const std::string &term) {
      accumulate(in(i), unbroadcast(term, yInfo.shape, shapeOf(i), shapeOf(i)));
    };
    if (type == "Add" || type == "Sub") {
      if (wants(0))
        toInput(0, g);
      if (wants(1))
        toInput(1, type == "Add" ? g : emit("Neg", {g}));
    } else if (type == "Mul") {
      if (wants(0))
        toInput(0, emit("Mul", {g, in(1)}));
      if (wants(1))
        toInput(1, emit("Mul", {g, in(0)}));
    } else if (type == "Div") { // d(a/b)/db = -(a/b)/b
      if (wants(0))
        toInput(0, emit("Div", {g, in(1)}));
      if (wants(1))
        toInput(1, emit("Neg", {emit("Div", {emit("Mul", {g, y}), in(1)})}));
    } else if (type == "Neg") {
      accumulate(in(0), emit("Neg", {g}));
    } else if (type == "Identity") {
      accumulate(in(0), g);
    } else if (type == "Relu") {
      const std::string zero = constant(yInfo.dtype, {}, 0.0, "zero");
      NodeProto &cast = emitNode("Cast", {emit("Greater", {in(0), zero})}, fresh("positive"));
      addIntAttr(cast, "to", dtypeToOnnx(info(in(0)).dtype));
      accumulate(in(0), emit("Mul", {g, cast.output(0)}));
    } else if (type == "Sigmoid") { // y (1 - y)
      const std::string one = constant(yInfo.dtype, {}, 1.0, "one");
      accumulate(in(0), emit("Mul", {g, emit("Mul", {y, emit("Sub", {one, y})})}));
    } else if (type == "Tanh") { // 1 - y²
      const std::string one = constant(yInfo.dtype, {}, 1.0, "one");
      accumulate(in(0), emit("Mul", {g, emit("Sub", {one, emit("Mul", {y, y})})}));
    } else if (type == "Exp") {
      accumulate(in(0), emit("Mul", {g, y}));
    } else if (type == "Log") {
      accumulate(in(0), emit("Div", {g, in(0)}));
    } else if (type == "MatMul") {
      matMul(n, g, wants(0), wants(1));
    }
  }

  // numpy matmul: a 1-D operand is promoted to a matrix ([K] → [1,K] on the
  // left, [K,1] on the right) and the added axis removed from the result.
  void matMul(const NodeProto &n, const std::string &g, bool wantA, bool wantB) {
    const Shape a = info(n.input(0)).shape, b = info(n.input(1)).shape, y = info(n.output(0)).shape;
    const Shape a2 = a.size() == 1 ? Shape{1, a[0]} : a;
    const Shape b2 = b.size() == 1 ? Shape{b[0], 1} : b;
    const int64_t m = a2[a2.size() - 2], k = a2.back(), cols = b2.back();
    Shape batch;
    if (a.size() > 1 && b.size() > 1)
      batch.assign(y.begin(), y.end() - 2);
    else if (a.size() > 1)
      batch.assign(y.begin(), y.end() - 1);
    else if (b.size() > 1)
      batch.assign(y.begin(), y.end() - 1);
    Shape g2 = batch;
    g2.push_back(m);
    g2.push_back(cols);
    const std::string gm = g2 == y ? g : reshape(g, g2);
    auto matrix = [&](int i, const Shape &s, const Shape &s2) { return s == s2 ? n.input(i) : reshape(n.input(i), s2); };
    auto swapLast = [&](const std::string &t, size_t rank) {
      std::vector<int64_t> perm;
      for (size_t d = 0; d < rank; ++d)
        perm.push_back(int64_t(d));
      std::swap(perm[rank - 1], perm[rank - 2]);
      const std::string out = fresh("Transpose");
      addIntsAttr(emitNode("Transpose", {t}, out), "perm", perm);
      return out;
    };
    if (wantA) { // dA = G · Bᵀ, shape batch + [m, k]
      Shape s = batch;
      s.push_back(m);
      s.push_back(k);
      const std::string ga = emit("MatMul", {gm, swapLast(matrix(1, b, b2), b2.size())});
      accumulate(n.input(0), unbroadcast(ga, s, a2, a));
    }
    if (wantB) { // dB = Aᵀ · G, shape batch + [k, cols]
      Shape s = batch;
      s.push_back(k);
      s.push_back(cols);
      const std::string gb = emit("MatMul", {swapLast(matrix(0, a, a2), a2.size()), gm});
      accumulate(n.input(1), unbroadcast(gb, s, b2, b));
    }
  }

  const NodeProto &grad_;
  const std::string name_;
  int64_t opset_;
  const std::map<std::string, ir::TensorInfo> &infos_;
  GraphProto &out_;
  const std::string &path_;
  std::map<std::string, std::string> grads_; // tensor → its accumulated gradient
  int counter_ = 0;
};

std::vector<std::string> stringsAttr(const NodeProto &n, const char *name) {
  for (const auto &a : n.attribute())
    if (a.name() == name)
      return {a.strings().begin(), a.strings().end()};
  return {};
}

} // namespace

int expandGradients(::onnx::ModelProto &model, int64_t opset, const TensorInfoEvaluator &infosOf,
                    const std::string &path) {
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
    std::vector<const NodeProto *> forward;
    for (int k : needed) {
      *fg->add_node() = graph.node(k);
      forward.push_back(&graph.node(k));
    }
    fg->clear_output();
    fg->add_output()->set_name(y);
    const std::map<std::string, ir::TensorInfo> infos = infosOf(forwardModel);
    // y's nodes may come after the Gradient node: they go first.
    for (int k : needed)
      if (!emitted[size_t(k)]) {
        *rebuilt.add_node() = graph.node(k);
        emitted[size_t(k)] = true;
      }
    GradientBuilder(node, name, opset, infos, rebuilt, path).build(forward, xs, y);
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
