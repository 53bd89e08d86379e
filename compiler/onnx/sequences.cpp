// Tensor sequences whose structure is known at compile time are resolved
// before import, as PopART's static graphs require: a sequence becomes the
// list of tensor names it holds, and each sequence op becomes the tensor op
// that yields the same values (SequenceAt → Identity, ConcatFromSequence →
// [Unsqueeze +] Concat, SplitToSequence → Split [+ Squeeze], SequenceLength →
// a constant). Positions, split sizes and the split input's shape must be
// known at compile time; a sequence that is a graph input or output, or that
// reaches any other op, is refused with the node named.
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"
#include "support/log.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

namespace popc::onnx::detail {

namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

bool isAiOnnx(const NodeProto &node) { return node.domain().empty() || node.domain() == "ai.onnx"; }

void addIntAttr(NodeProto &n, const char *name, int64_t value) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(value);
}

void addIntsAttr(NodeProto &n, const char *name, const std::vector<int64_t> &values) {
  auto *a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t v : values)
    a->add_ints(v);
}

const std::set<std::string> kSequenceOps = {"SequenceEmpty",  "SequenceConstruct", "SequenceInsert",
                                            "SequenceErase",  "SequenceAt",        "SequenceLength",
                                            "ConcatFromSequence", "SplitToSequence"};

class SequenceResolver {
public:
  SequenceResolver(::onnx::ModelProto &model, int64_t opset, const std::map<std::string, ir::Tensor> &frozen,
                   const StaticTensorEvaluator &evaluate, const std::string &path)
      : model_(model), opset_(opset), frozen_(frozen), evaluate_(evaluate), path_(path) {}

  int run() {
    GraphProto &graph = *model_.mutable_graph();
    bool any = false;
    for (const auto &node : graph.node())
      any = any || (isAiOnnx(node) && kSequenceOps.count(node.op_type()));
    if (!any)
      return 0;
    for (const auto &init : graph.initializer())
      constants_[init.name()] = &init;
    int resolved = 0;
    for (const auto &node : graph.node()) {
      if (isAiOnnx(node) && kSequenceOps.count(node.op_type())) {
        resolve(node);
        ++resolved;
        continue;
      }
      for (const auto &in : node.input())
        if (sequences_.count(in))
          fail("{}: node '{}' ({}) takes sequence '{}' as an input; popc resolves sequences at compile time and "
               "supports them only as inputs of the sequence ops",
               path_, node.name(), node.op_type(), in);
      if (node.op_type() == "Constant" && node.output_size() == 1)
        for (const auto &a : node.attribute())
          if (a.name() == "value" && a.has_t())
            constants_[node.output(0)] = &a.t();
      *rebuilt_.add_node() = node;
    }
    for (const auto &out : graph.output())
      if (sequences_.count(out.name()))
        fail("{}: graph output '{}' is a sequence; popc executables return tensors (concatenate it with "
             "ConcatFromSequence)",
             path_, out.name());
    graph.clear_node();
    for (auto &n : *rebuilt_.mutable_node())
      *graph.add_node() = std::move(n);
    log::get("onnx")->debug("{}: resolved {} sequence ops at compile time", path_, resolved);
    return resolved;
  }

private:
  using Sequence = std::vector<std::string>;

  [[noreturn]] void failNode(const NodeProto &node, const std::string &what) {
    fail("{}: {} node '{}': {}", path_, node.op_type(), node.name(), what);
  }

  const Sequence &sequenceInput(const NodeProto &node, int index) {
    if (node.input_size() <= index || !sequences_.count(node.input(index)))
      failNode(node, fmt::format("input {} must be a sequence made by a sequence op earlier in the graph "
                                 "(sequence graph inputs are not supported)",
                                 index));
    return sequences_.at(node.input(index));
  }

  // A tensor's value at compile time: an initializer, a Constant, a frozen
  // input, or computed from the nodes before this one.
  ir::Tensor valueOf(const NodeProto &node, const std::string &name, const char *what) {
    if (auto it = frozen_.find(name); it != frozen_.end()) {
      ir::Tensor t = it->second;
      t.name = name;
      t.kind = ir::TensorKind::Constant;
      return t;
    }
    if (auto it = constants_.find(name); it != constants_.end())
      return tensorFromProto(*it->second, fmt::format("{}: {} '{}'", path_, what, name));
    const std::string message = fmt::format("{}: {} node '{}': {} '{}' must be known at compile time", path_,
                                            node.op_type(), node.name(), what, name);
    const auto inputs = realInputNames(model_.graph());
    if (std::find(inputs.begin(), inputs.end(), name) != inputs.end())
      throw Error(fmt::format("{}; it is a graph input: give its value at compile time with --freeze-input "
                              "{}=FILE.npy",
                              message, name),
                  name);
    if (auto t = evaluatePrefix(name); t && t->value)
      return *t->value;
    fail("{} (an initializer, a Constant or a value computed from them)", message);
  }

  std::optional<StaticTensor> evaluatePrefix(const std::string &name) {
    if (!evaluate_)
      return std::nullopt;
    ::onnx::ModelProto prefix = model_;
    auto *g = prefix.mutable_graph();
    g->clear_node();
    for (const auto &n : rebuilt_.node())
      *g->add_node() = n;
    g->clear_output();
    g->add_output()->set_name(name);
    return evaluate_(prefix, name);
  }

  std::vector<int64_t> intsOf(const NodeProto &node, const std::string &name, const char *what) {
    std::vector<int64_t> out;
    for (double d : valueOf(node, name, what).toDoubles())
      out.push_back(int64_t(d));
    return out;
  }

  // A position in [-n, n) (or [-n, n] when inserting), as an index.
  size_t position(const NodeProto &node, int index, size_t n, bool inserting) {
    const auto v = intsOf(node, node.input(index), "position");
    if (v.size() != 1)
      failNode(node, fmt::format("position '{}' must hold one value, it holds {}", node.input(index), v.size()));
    const int64_t hi = int64_t(n) + (inserting ? 1 : 0);
    if (v[0] < -int64_t(n) || v[0] >= hi)
      failNode(node, fmt::format("position {} is outside the sequence of {} tensors", v[0], n));
    return size_t(v[0] < 0 ? v[0] + int64_t(n) : v[0]);
  }

  int64_t intAttr(const NodeProto &node, const char *name, int64_t fallback) {
    for (const auto &a : node.attribute())
      if (a.name() == name)
        return a.i();
    return fallback;
  }

  std::string freshName(const NodeProto &node, const std::string &what) {
    return fmt::format("{}/{}{}", node.name().empty() ? node.op_type() : node.name(), what, counter_++);
  }

  NodeProto &emit(const std::string &type, const std::string &name, std::vector<std::string> inputs,
                  std::vector<std::string> outputs) {
    NodeProto &n = *rebuilt_.add_node();
    n.set_op_type(type);
    n.set_name(name);
    for (auto &i : inputs)
      n.add_input(i);
    for (auto &o : outputs)
      n.add_output(o);
    return n;
  }

  // A Constant node named `name` with output `out`: an int64 scalar or 1-D
  // tensor holding `values`. Recorded as a compile-time constant.
  void emitIntConstant(const std::string &name, const std::string &out, const std::vector<int64_t> &values,
                       bool scalar) {
    NodeProto &c = emit("Constant", name, {}, {out});
    auto *a = c.add_attribute();
    a->set_name("value");
    a->set_type(::onnx::AttributeProto::TENSOR);
    auto *t = a->mutable_t();
    t->set_data_type(::onnx::TensorProto::INT64);
    if (!scalar)
      t->add_dims(int64_t(values.size()));
    for (int64_t v : values)
      t->add_int64_data(v);
    constants_[out] = t;
  }

  // A fresh 1-D int64 constant holding `values`; returns its name.
  std::string emitInts(const NodeProto &node, const std::vector<int64_t> &values) {
    const std::string name = freshName(node, "const");
    emitIntConstant(name, name, values, false);
    return name;
  }

  // Un/Squeeze along `axis`: axes are an input from opset 13, an attribute before.
  void emitAxisOp(const NodeProto &node, const char *type, const std::string &in, const std::string &out,
                  int64_t axis) {
    if (opset_ >= 13) {
      const std::string axes = emitInts(node, {axis});
      emit(type, freshName(node, type), {in, axes}, {out});
    } else {
      addIntsAttr(emit(type, freshName(node, type), {in}, {out}), "axes", {axis});
    }
  }

  void resolve(const NodeProto &node) {
    const std::string &type = node.op_type();
    const std::string out = node.output_size() ? node.output(0) : "";
    if (type == "SequenceEmpty") {
      sequences_[out] = {};
    } else if (type == "SequenceConstruct") {
      sequences_[out] = Sequence(node.input().begin(), node.input().end());
    } else if (type == "SequenceInsert") {
      Sequence s = sequenceInput(node, 0);
      const size_t at = node.input_size() > 2 && !node.input(2).empty() ? position(node, 2, s.size(), true) : s.size();
      s.insert(s.begin() + ptrdiff_t(at), node.input(1));
      sequences_[out] = std::move(s);
    } else if (type == "SequenceErase") {
      Sequence s = sequenceInput(node, 0);
      if (s.empty())
        failNode(node, "erasing from an empty sequence");
      const size_t at = node.input_size() > 1 && !node.input(1).empty() ? position(node, 1, s.size(), false)
                                                                        : s.size() - 1;
      s.erase(s.begin() + ptrdiff_t(at));
      sequences_[out] = std::move(s);
    } else if (type == "SequenceAt") {
      const Sequence &s = sequenceInput(node, 0);
      emit("Identity", node.name(), {s[position(node, 1, s.size(), false)]}, {out});
    } else if (type == "SequenceLength") {
      emitIntConstant(node.name(), out, {int64_t(sequenceInput(node, 0).size())}, true);
    } else if (type == "ConcatFromSequence") {
      concatFromSequence(node, out);
    } else if (type == "SplitToSequence") {
      splitToSequence(node, out);
    }
  }

  void concatFromSequence(const NodeProto &node, const std::string &out) {
    const Sequence &s = sequenceInput(node, 0);
    if (s.empty())
      failNode(node, "concatenating an empty sequence");
    const int64_t axis = intAttr(node, "axis", 0);
    if (!intAttr(node, "new_axis", 0)) {
      addIntAttr(emit("Concat", node.name(), s, {out}), "axis", axis);
      return;
    }
    // new_axis: each tensor gains the axis (rank r+1, axis in [-r-1, r]), then Concat.
    auto info = evaluatePrefix(s[0]);
    if (!info && axis < 0)
      failNode(node, fmt::format("the rank of '{}' must be known at compile time for a negative axis", s[0]));
    const int64_t rank = info ? int64_t(info->info.shape.size()) : 0;
    const int64_t a = axis < 0 ? axis + rank + 1 : axis;
    std::vector<std::string> parts;
    for (const auto &t : s) {
      parts.push_back(freshName(node, "part"));
      emitAxisOp(node, "Unsqueeze", t, parts.back(), a);
    }
    addIntAttr(emit("Concat", node.name(), parts, {out}), "axis", a);
  }

  void splitToSequence(const NodeProto &node, const std::string &out) {
    auto info = evaluatePrefix(node.input(0));
    if (!info)
      failNode(node, fmt::format("the shape of '{}' must be known at compile time", node.input(0)));
    const Shape &shape = info->info.shape;
    const int64_t rank = int64_t(shape.size());
    int64_t axis = intAttr(node, "axis", 0);
    if (axis < -rank || axis >= rank)
      failNode(node, fmt::format("axis {} is outside rank {}", axis, rank));
    axis = axis < 0 ? axis + rank : axis;
    const int64_t dim = shape[size_t(axis)];
    std::vector<int64_t> sizes;
    const bool hasSplit = node.input_size() > 1 && !node.input(1).empty();
    if (!hasSplit) {
      sizes.assign(size_t(dim), 1);
    } else {
      const ir::Tensor split = valueOf(node, node.input(1), "split");
      std::vector<int64_t> v;
      for (double d : split.toDoubles())
        v.push_back(int64_t(d));
      if (split.info.shape.empty()) { // one chunk size; the last chunk may be smaller
        if (v.empty() || v[0] <= 0)
          failNode(node, "split must be positive");
        for (int64_t done = 0; done < dim; done += v[0])
          sizes.push_back(std::min(v[0], dim - done));
      } else {
        int64_t total = 0;
        for (int64_t x : v) {
          if (x < 0)
            failNode(node, "split sizes must not be negative");
          total += x;
        }
        if (total != dim)
          failNode(node, fmt::format("split sizes add up to {}, but axis {} has {} elements", total, axis, dim));
        sizes = v;
      }
    }
    if (sizes.empty())
      failNode(node, fmt::format("splitting an empty axis {} gives an empty sequence", axis));
    const bool squeeze = !hasSplit && intAttr(node, "keepdims", 1) == 0;
    Sequence s;
    for (size_t i = 0; i < sizes.size(); ++i)
      s.push_back(freshName(node, squeeze ? "chunk" : "part"));
    std::vector<std::string> inputs{node.input(0)};
    if (opset_ >= 13)
      inputs.push_back(emitInts(node, sizes));
    NodeProto &split = emit("Split", freshName(node, "Split"), inputs, s);
    addIntAttr(split, "axis", axis);
    if (opset_ < 13)
      addIntsAttr(split, "split", sizes);
    if (squeeze)
      for (auto &part : s) {
        const std::string squeezed = freshName(node, "part");
        emitAxisOp(node, "Squeeze", part, squeezed, axis);
        part = squeezed;
      }
    sequences_[out] = std::move(s);
  }

  ::onnx::ModelProto &model_;
  int64_t opset_;
  const std::map<std::string, ir::Tensor> &frozen_;
  const StaticTensorEvaluator &evaluate_;
  const std::string &path_;
  std::map<std::string, const ::onnx::TensorProto *> constants_;
  std::map<std::string, Sequence> sequences_;
  GraphProto rebuilt_;
  int counter_ = 0;
};

} // namespace

int resolveStaticSequences(::onnx::ModelProto &model, int64_t opset, const std::map<std::string, ir::Tensor> &frozen,
                           const StaticTensorEvaluator &evaluate, const std::string &path) {
  return SequenceResolver(model, opset, frozen, evaluate, path).run();
}

} // namespace popc::onnx::detail
