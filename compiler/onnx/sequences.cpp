// Tensor sequences whose structure is known at compile time are resolved
// before import, as PopART's static graphs require: a sequence becomes the
// list of tensor names it holds, and each sequence op becomes the tensor op
// that yields the same values (SequenceAt → Identity, ConcatFromSequence →
// [Unsqueeze +] Concat, SplitToSequence → Split [+ Squeeze], SequenceLength →
// a constant, SequenceMap → its body once per element). Optionals are
// resolved the same way: Optional() is absent, Optional(v) and any plain
// value are present, so OptionalHasElement folds to a constant and
// OptionalGetElement to the value. Positions, split sizes and the split
// input's shape must be known at compile time; a sequence that reaches any
// other op is refused with the node named. Graph inputs were lowered before
// (sequence_io.cpp); a sequence graph output `y` becomes the tensor outputs
// y.0, y.1, ..., an absent optional output disappears, a present one is its value.
#include "compiler/onnx/importer.h"
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"
#include "support/log.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <set>

namespace popc::onnx::detail {

namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

bool isAiOnnx(const NodeProto &node) { return node.domain().empty() || node.domain() == "ai.onnx"; }


const std::set<std::string> kSequenceOps = {
    "SequenceEmpty", "SequenceConstruct",  "SequenceInsert",  "SequenceErase", "SequenceAt",
    "SequenceLength", "ConcatFromSequence", "SplitToSequence", "SequenceMap",   "Optional",
    "OptionalHasElement", "OptionalGetElement"};

bool notTensor(const ::onnx::ValueInfoProto &v) { return v.has_type() && !v.type().has_tensor_type(); }

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
    for (const auto &out : graph.output())
      any = any || notTensor(out);
    if (!any)
      return 0;
    for (const auto &init : graph.initializer())
      constants_[init.name()] = &init;
    int resolved = 0;
    std::deque<NodeProto> work(graph.node().begin(), graph.node().end());
    while (!work.empty()) {
      const NodeProto node = std::move(work.front());
      work.pop_front();
      if (isAiOnnx(node) && node.op_type() == "SequenceMap") {
        auto body = sequenceMap(node); // its body once per element, resolved like the rest
        for (auto it = body.rbegin(); it != body.rend(); ++it)
          work.push_front(std::move(*it));
        ++resolved;
        continue;
      }
      if (isAiOnnx(node) && (kSequenceOps.count(node.op_type()) || isAlias(node))) {
        resolve(node);
        ++resolved;
        continue;
      }
      for (const auto &in : node.input()) {
        if (sequences_.count(in))
          fail("{}: node '{}' ({}) takes sequence '{}' as an input; popc resolves sequences at compile time and "
               "supports them only as inputs of the sequence ops",
               path_, node.name(), node.op_type(), in);
        if (absent_.count(in))
          fail("{}: node '{}' ({}) takes '{}', an optional that is empty at compile time, as an input", path_,
               node.name(), node.op_type(), in);
      }
      if (node.op_type() == "Constant" && node.output_size() == 1)
        for (const auto &a : node.attribute())
          if (a.name() == "value" && a.has_t())
            constants_[node.output(0)] = &a.t();
      *rebuilt_.add_node() = node;
    }
    flattenOutputs(graph);
    graph.clear_node();
    for (auto &n : *rebuilt_.mutable_node())
      *graph.add_node() = std::move(n);
    log::get("onnx")->debug("{}: resolved {} sequence ops at compile time", path_, resolved);
    return resolved;
  }

private:
  using Sequence = std::vector<std::string>;

  // Identity of a sequence or of an empty optional is an alias, resolved here.
  bool isAlias(const NodeProto &node) const {
    return node.op_type() == "Identity" && node.input_size() == 1 &&
           (sequences_.count(node.input(0)) || absent_.count(node.input(0)));
  }

  // Graph outputs become tensors: a sequence `y` → y.0, y.1, ... (Identity of
  // each element); an empty optional → no output; a present one → its value.
  void flattenOutputs(GraphProto &graph) {
    std::vector<::onnx::ValueInfoProto> outputs;
    for (const auto &out : graph.output()) {
      const std::string &name = out.name();
      ::onnx::TypeProto type = out.type();
      if (absent_.count(name)) {
        if (out.has_type() && !type.has_optional_type())
          fail("{}: graph output '{}' is an empty optional but the model does not declare it optional", path_, name);
        continue; // an empty optional output: the executable does not return it
      }
      if (type.has_optional_type()) {
        const ::onnx::TypeProto inner = type.optional_type().elem_type();
        type = inner;
      }
      if (!sequences_.count(name)) {
        if (type.has_sequence_type())
          fail("{}: graph output '{}' is declared a sequence but is not one popc could resolve", path_, name);
        ::onnx::ValueInfoProto v = out;
        if (v.has_type() && !type.has_tensor_type())
          fail("{}: graph output '{}' is neither a tensor nor a sequence of tensors", path_, name);
        if (v.has_type())
          *v.mutable_type() = type;
        outputs.push_back(std::move(v));
        continue;
      }
      int32_t elemType = 0;
      if (type.has_sequence_type() && type.sequence_type().elem_type().has_tensor_type())
        elemType = type.sequence_type().elem_type().tensor_type().elem_type();
      const Sequence &s = sequences_.at(name);
      for (size_t i = 0; i < s.size(); ++i) {
        const std::string element = sequenceElementName(name, i);
        emit("Identity", element + "/Identity", {s[i]}, {element});
        ::onnx::ValueInfoProto v;
        v.set_name(element);
        // Type and shape from popc's own inference: ONNX's cannot always see
        // through the resolved nodes, and the checker wants output shapes.
        auto *tt = v.mutable_type()->mutable_tensor_type();
        const ::onnx::ValueInfoProto *input = nullptr;
        for (const auto &in : graph.input())
          if (in.name() == s[i])
            input = &in;
        if (input && input->type().has_tensor_type()) {
          *tt = input->type().tensor_type();
        } else if (auto info = evaluatePrefix(s[i])) {
          tt->set_elem_type(int32_t(dtypeToOnnx(info->info.dtype)));
          auto *shape = tt->mutable_shape();
          for (int64_t d : info->info.shape)
            shape->add_dim()->set_dim_value(d);
        } else if (elemType) {
          tt->set_elem_type(elemType);
        }
        outputs.push_back(std::move(v));
      }
    }
    graph.clear_output();
    for (auto &v : outputs)
      *graph.add_output() = std::move(v);
  }

  // SequenceMap: the body inlined once per element of the first input's
  // sequence; sequence inputs give their i-th element, tensors stay as they are;
  // output k collects the body's k-th output of every iteration.
  std::vector<NodeProto> sequenceMap(const NodeProto &node) {
    const GraphProto *body = nullptr;
    for (const auto &a : node.attribute())
      if (a.name() == "body" && a.has_g())
        body = &a.g();
    if (!body)
      failNode(node, "it has no 'body' graph");
    const size_t n = sequenceInput(node, 0).size();
    if (body->input_size() != node.input_size() || body->output_size() != node.output_size())
      failNode(node, "its body's inputs and outputs do not match the node's");
    for (int j = 1; j < node.input_size(); ++j)
      if (sequences_.count(node.input(j)) && sequences_.at(node.input(j)).size() != n)
        failNode(node, fmt::format("sequence inputs '{}' and '{}' have different lengths", node.input(0),
                                   node.input(j)));
    const std::set<std::string> local = definedNames(*body);
    for (const auto &b : body->node()) {
      for (const auto &a : b.attribute())
        if (a.has_g() || a.graphs_size())
          failNode(node, fmt::format("its body's node '{}' has a subgraph, which popc cannot inline here", b.name()));
    }
    std::vector<NodeProto> nodes;
    std::vector<Sequence> outs(size_t(node.output_size()));
    const std::string base = node.name().empty() ? "SequenceMap" : node.name();
    for (size_t i = 0; i < n; ++i) {
      const std::string prefix = fmt::format("{}/iter{}/", base, i);
      std::map<std::string, std::string> bind;
      for (int j = 0; j < node.input_size(); ++j) {
        const std::string &in = node.input(j);
        bind[body->input(j).name()] = sequences_.count(in) ? sequences_.at(in)[i] : in;
      }
      auto rename = [&](const std::string &name) -> std::string {
        if (name.empty())
          return name;
        if (auto it = bind.find(name); it != bind.end())
          return it->second;
        return local.count(name) ? prefix + name : name;
      };
      for (const auto &init : body->initializer()) {
        NodeProto c;
        c.set_op_type("Constant");
        c.set_name(prefix + init.name());
        c.add_output(rename(init.name()));
        auto *a = c.add_attribute();
        a->set_name("value");
        a->set_type(::onnx::AttributeProto::TENSOR);
        *a->mutable_t() = init;
        a->mutable_t()->clear_name();
        nodes.push_back(std::move(c));
      }
      for (const auto &b : body->node()) {
        NodeProto copy = b;
        copy.set_name(prefix + (b.name().empty() ? b.op_type() : b.name()));
        for (auto &x : *copy.mutable_input())
          x = rename(x);
        for (auto &x : *copy.mutable_output())
          x = rename(x);
        nodes.push_back(std::move(copy));
      }
      for (int k = 0; k < node.output_size(); ++k)
        outs[size_t(k)].push_back(rename(body->output(k).name()));
    }
    for (int k = 0; k < node.output_size(); ++k)
      sequences_[node.output(k)] = outs[size_t(k)];
    return nodes;
  }

  [[noreturn]] void failNode(const NodeProto &node, const std::string &what) {
    fail("{}: {} node '{}': {}", path_, node.op_type(), node.name(), what);
  }

  const Sequence &sequenceInput(const NodeProto &node, int index) {
    if (node.input_size() <= index || !sequences_.count(node.input(index)))
      failNode(node, fmt::format("input {} must be a sequence (made by a sequence op earlier in the graph, or a "
                                 "sequence graph input)",
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
    return appendNode(rebuilt_, type, name, inputs, outputs);
  }

  // An int64 Constant with output `out`: a scalar or a 1-D tensor holding
  // `values`. Recorded as a compile-time constant.
  void emitIntConstant(const std::string &out, const std::vector<int64_t> &values, bool scalar) {
    constants_[out] = &appendIntConstant(rebuilt_, out, values, scalar);
  }

  // A fresh 1-D int64 constant holding `values`; returns its name.
  std::string emitInts(const NodeProto &node, const std::vector<int64_t> &values) {
    const std::string name = freshName(node, "const");
    emitIntConstant(name, values, false);
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
      emitIntConstant(out, {int64_t(sequenceInput(node, 0).size())}, true);
    } else if (type == "ConcatFromSequence") {
      concatFromSequence(node, out);
    } else if (type == "SplitToSequence") {
      splitToSequence(node, out);
    } else if (type == "Identity") { // of a sequence or an empty optional
      if (sequences_.count(node.input(0)))
        sequences_[out] = sequences_.at(node.input(0));
      else
        absent_.insert(out);
    } else if (type == "Optional") {
      optional(node, out);
    } else if (type == "OptionalHasElement") {
      const bool has = node.input_size() > 0 && !node.input(0).empty() && !absent_.count(node.input(0));
      NodeProto &c = emit("Constant", node.name(), {}, {out});
      auto *a = c.add_attribute();
      a->set_name("value");
      a->set_type(::onnx::AttributeProto::TENSOR);
      a->mutable_t()->set_data_type(::onnx::TensorProto::BOOL);
      a->mutable_t()->add_int32_data(has ? 1 : 0);
    } else if (type == "OptionalGetElement") {
      const std::string &in = node.input_size() ? node.input(0) : out;
      if (absent_.count(in))
        failNode(node, fmt::format("optional '{}' is empty at compile time", in));
      if (sequences_.count(in))
        sequences_[out] = sequences_.at(in);
      else
        emit("Identity", node.name(), {in}, {out});
    }
  }

  // Optional(v) holds v (a sequence stays a sequence); Optional() is empty.
  void optional(const NodeProto &node, const std::string &out) {
    if (node.input_size() == 0 || node.input(0).empty()) {
      absent_.insert(out);
      return;
    }
    const std::string &in = node.input(0);
    if (absent_.count(in))
      failNode(node, fmt::format("'{}' is an empty optional", in));
    if (sequences_.count(in))
      sequences_[out] = sequences_.at(in);
    else
      emit("Identity", node.name(), {in}, {out});
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
  std::set<std::string> absent_; // optionals that are empty
  GraphProto rebuilt_;
  int counter_ = 0;
};

} // namespace

bool resolvedAtImport(const ::onnx::NodeProto &node) { return isAiOnnx(node) && kSequenceOps.count(node.op_type()); }

int resolveStaticSequences(::onnx::ModelProto &model, int64_t opset, const std::map<std::string, ir::Tensor> &frozen,
                           const StaticTensorEvaluator &evaluate, const std::string &path) {
  return SequenceResolver(model, opset, frozen, evaluate, path).run();
}

} // namespace popc::onnx::detail
