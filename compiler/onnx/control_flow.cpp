// If, Loop and Scan whose control values are known at compile time are
// specialised away before import: an If becomes the nodes of the branch it
// takes, a Loop with a constant trip count (and a condition that stays true)
// is unrolled, its scan outputs concatenated, and a Scan is unrolled over its
// static sequence length (the scan inputs' shapes), each iteration reading
// its slices with Gather. popc has no device-side control flow yet, so
// a condition computed at run time is refused with a clear error; when it is
// a graph input, the error says how to freeze it (--freeze-input).
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"
#include "support/log.h"

#include <fmt/format.h>

#include <map>
#include <optional>
#include <set>

namespace popc::onnx::detail {

namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

const int kMaxUnrolledIterations = 4096;

class ControlFlowExpander {
public:
  ControlFlowExpander(::onnx::ModelProto &model, int64_t opset, const std::map<std::string, ir::Tensor> &frozen,
                      const ControlValueEvaluator &evaluate, const std::string &path)
      : model_(model), opset_(opset), frozen_(frozen), evaluate_(evaluate), path_(path) {}

  int run() {
    int expanded = 0;
    for (int round = 0; round < 16; ++round) {
      GraphProto &graph = *model_.mutable_graph();
      collectConstants(graph);
      GraphProto rebuilt;
      done_ = &rebuilt;
      bool changed = false;
      for (current_ = 0; current_ < graph.node_size(); ++current_) {
        const NodeProto &node = graph.node(current_);
        const bool ai = node.domain().empty() || node.domain() == "ai.onnx";
        if (ai && node.op_type() == "If") {
          expandIf(node, rebuilt);
        } else if (ai && node.op_type() == "Loop") {
          expandLoop(node, rebuilt, graph);
        } else if (ai && node.op_type() == "Scan") {
          expandScan(node, rebuilt);
        } else {
          *rebuilt.add_node() = node;
          continue;
        }
        changed = true;
        ++expanded;
      }
      if (!changed)
        break;
      checkExpandedSize(rebuilt.node_size(), "expanding If/Loop/Scan", path_);
      graph.clear_node();
      for (auto &n : *rebuilt.mutable_node())
        *graph.add_node() = std::move(n);
    }
    return expanded;
  }

private:
  void collectConstants(const GraphProto &graph) {
    constants_.clear();
    for (const auto &init : graph.initializer())
      constants_[init.name()] = &init;
    for (const auto &node : graph.node())
      if (node.op_type() == "Constant" && node.output_size() == 1)
        for (const auto &a : node.attribute())
          if (a.name() == "value" && a.has_t())
            constants_[node.output(0)] = &a.t();
  }

  [[noreturn]] void failNotConstant(const NodeProto &node, const std::string &input, const char *what) {
    const std::string message = fmt::format("{}: {} node '{}': {} '{}' must be known at compile time (popc has no "
                                            "run-time control flow yet)",
                                            path_, node.op_type(), node.name(), what, input);
    const std::string source = graphInputFeeding(input);
    if (!source.empty())
      throw Error(fmt::format("{}; it {} graph input '{}': give its value at compile time with --freeze-input "
                              "{}=FILE.npy",
                              message, source == input ? "is" : "is computed from", source, source),
                  source);
    fail("{}", message);
  }

  // A graph input (not frozen, not an initializer) that `name` is or is computed
  // from, searching producers depth first; "" if none.
  std::string graphInputFeeding(const std::string &name) {
    std::map<std::string, const NodeProto *> producer;
    for (const auto &n : model_.graph().node())
      for (const auto &o : n.output())
        producer[o] = &n;
    std::set<std::string> seen;
    std::vector<std::string> todo{name};
    while (!todo.empty()) {
      const std::string t = todo.back();
      todo.pop_back();
      if (t.empty() || !seen.insert(t).second)
        continue;
      for (const auto &in : model_.graph().input())
        if (in.name() == t && !constants_.count(t) && !frozen_.count(t))
          return t;
      if (auto it = producer.find(t); it != producer.end())
        for (const auto &i : it->second->input())
          todo.push_back(i);
    }
    return "";
  }

  int64_t scalarOf(const NodeProto &node, const ir::Tensor &t, const std::string &name, const char *what) {
    if (t.info.elements() != 1 || t.data.empty())
      fail("{}: {} node '{}': {} '{}' must hold one value", path_, node.op_type(), node.name(), what, name);
    switch (t.info.dtype) {
    case DType::I64: return *reinterpret_cast<const int64_t *>(t.data.data());
    case DType::I32: return *reinterpret_cast<const int32_t *>(t.data.data());
    case DType::F32: return int64_t(*reinterpret_cast<const float *>(t.data.data()));
    case DType::F64: return int64_t(*reinterpret_cast<const double *>(t.data.data()));
    default: return t.data[0] != 0; // bool / uint8
    }
  }

  // Integer value of a scalar control input (bool or integer).
  // Integer value of a scalar control input: frozen, a constant, or computed at
  // compile time from the nodes before this one (e.g. a trip count from shapes).
  int64_t scalar(const NodeProto &node, const std::string &name, const char *what) {
    if (auto it = frozen_.find(name); it != frozen_.end())
      return scalarOf(node, it->second, name, what);
    if (auto it = constants_.find(name); it != constants_.end())
      return scalarOf(node, tensorFromProto(*it->second, fmt::format("{}: {} '{}'", path_, what, name)), name, what);
    if (evaluate_)
      if (auto value = evaluate_(name, *done_))
        return scalarOf(node, *value, name, what);
    failNotConstant(node, name, what);
  }

  const GraphProto &graphAttr(const NodeProto &node, const char *name) {
    for (const auto &a : node.attribute())
      if (a.name() == name && a.has_g())
        return a.g();
    fail("{}: {} node '{}' has no '{}' subgraph", path_, node.op_type(), node.name(), name);
  }

  // Appends `body`'s nodes with its local names prefixed and `bind` applied
  // (body input/output name → outer name); returns nothing, names are fixed.
  void inlineBody(const GraphProto &body, const std::string &prefix, const std::map<std::string, std::string> &bind,
                  GraphProto &out) {
    const std::set<std::string> local = definedNames(body);
    auto rename = [&](const std::string &name) -> std::string {
      if (name.empty())
        return name;
      if (auto it = bind.find(name); it != bind.end())
        return it->second;
      return local.count(name) ? prefix + name : name; // outer-scope names stay
    };
    for (const auto &init : body.initializer()) {
      auto *t = model_.mutable_graph()->add_initializer();
      *t = init;
      t->set_name(rename(init.name()));
    }
    for (const auto &n : body.node()) {
      NodeProto copy = n;
      copy.set_name(prefix + (n.name().empty() ? n.op_type() : n.name()));
      for (auto &i : *copy.mutable_input())
        i = rename(i);
      for (auto &o : *copy.mutable_output())
        o = rename(o);
      // Nested subgraphs refer to outer names too: rename their free uses.
      for (auto &a : *copy.mutable_attribute())
        if (a.has_g())
          renameFreeUses(*a.mutable_g(), rename);
      *out.add_node() = std::move(copy);
    }
  }

  template <typename Rename> void renameFreeUses(GraphProto &g, const Rename &rename) {
    const std::set<std::string> local = definedNames(g);
    for (auto &n : *g.mutable_node())
      for (auto &i : *n.mutable_input())
        if (!i.empty() && !local.count(i))
          i = rename(i);
    for (auto &o : *g.mutable_output())
      if (!local.count(o.name()))
        o.set_name(rename(o.name()));
  }

  void identity(const std::string &from, const std::string &to, const std::string &name, GraphProto &out) {
    NodeProto *n = out.add_node();
    n->set_op_type("Identity");
    n->set_name(name);
    n->add_input(from);
    n->add_output(to);
  }

  std::string prefixOf(const NodeProto &node) { return (node.name().empty() ? node.op_type() : node.name()) + "/"; }

  void expandIf(const NodeProto &node, GraphProto &out) {
    const bool cond = scalar(node, node.input(0), "condition") != 0;
    const GraphProto &branch = graphAttr(node, cond ? "then_branch" : "else_branch");
    if (branch.output_size() != node.output_size())
      fail("{}: If node '{}': branch has {} outputs, the node {}", path_, node.name(), branch.output_size(),
           node.output_size());
    const std::string prefix = prefixOf(node) + (cond ? "then/" : "else/");
    inlineBody(branch, prefix, {}, out);
    for (int i = 0; i < node.output_size(); ++i)
      if (!node.output(i).empty()) {
        const std::string &src = branch.output(i).name();
        bool local = false;
        for (const auto &n : branch.node())
          for (const auto &o : n.output())
            local |= o == src;
        identity(local ? prefix + src : src, node.output(i), prefix + "out" + std::to_string(i), out);
      }
    log::get("onnx")->debug("{}: If '{}' takes its {} branch (constant condition)", path_, node.name(),
                            cond ? "then" : "else");
  }

  void expandLoop(const NodeProto &node, GraphProto &out, GraphProto &graph) {
    if (node.input_size() < 2 || node.input(0).empty())
      fail("{}: Loop node '{}': popc needs the trip count M (input 0) to unroll the loop", path_, node.name());
    const int64_t trips = scalar(node, node.input(0), "trip count");
    const bool condGiven = !node.input(1).empty();
    if (condGiven && scalar(node, node.input(1), "condition") == 0)
      fail("{}: Loop node '{}': the initial condition is false (zero iterations) — not supported", path_,
           node.name());
    if (trips < 1 || trips > kMaxUnrolledIterations)
      fail("{}: Loop node '{}': trip count {} must be between 1 and {} to unroll", path_, node.name(), trips,
           kMaxUnrolledIterations);
    const GraphProto &body = graphAttr(node, "body");
    const int carried = node.input_size() - 2;
    if (body.input_size() != carried + 2 || body.output_size() < carried + 1)
      fail("{}: Loop node '{}': body has {} inputs and {} outputs for {} loop-carried values", path_, node.name(),
           body.input_size(), body.output_size(), carried);
    const int scans = body.output_size() - 1 - carried;
    // The body's condition must stay what it was: cond_out = Identity(cond_in).
    const std::string &condIn = body.input(1).name(), &condOut = body.output(0).name();
    bool condKept = condOut == condIn;
    for (const auto &n : body.node())
      if (n.op_type() == "Identity" && n.output_size() == 1 && n.output(0) == condOut && n.input(0) == condIn)
        condKept = true;
    if (!condKept)
      fail("{}: Loop node '{}': its condition is computed in the body at run time; popc only unrolls loops whose "
           "condition stays constant",
           path_, node.name());

    const std::string base = prefixOf(node);
    std::vector<std::string> state;
    for (int v = 0; v < carried; ++v)
      state.push_back(node.input(2 + v));
    std::vector<std::vector<std::string>> scanParts(static_cast<size_t>(scans));
    // Outer name of body value `name` in the iteration inlined with `prefix`/`bind`.
    auto outerName = [&](const std::string &prefix, const std::map<std::string, std::string> &bind,
                         const std::string &name) {
      if (auto it = bind.find(name); it != bind.end())
        return it->second;
      for (const auto &n : body.node())
        for (const auto &o : n.output())
          if (o == name)
            return prefix + name;
      return name;
    };
    checkExpandedSize(out.node_size() + trips * (int64_t(body.node_size()) + 2),
                      fmt::format("unrolling Loop node '{}' {} times", node.name(), trips), path_);
    for (int64_t i = 0; i < trips; ++i) {
      const std::string prefix = fmt::format("{}iter{}/", base, i);
      std::map<std::string, std::string> bind;
      // iteration number: a constant; cond_in: the loop's condition (constant true).
      const std::string iterName = prefix + "iteration";
      auto *iter = model_.mutable_graph()->add_initializer();
      iter->set_name(iterName);
      iter->set_data_type(::onnx::TensorProto::INT64);
      iter->add_int64_data(i);
      bind[body.input(0).name()] = iterName;
      const std::string condName = prefix + "cond";
      auto *condT = model_.mutable_graph()->add_initializer();
      condT->set_name(condName);
      condT->set_data_type(::onnx::TensorProto::BOOL);
      condT->add_int32_data(1);
      bind[condIn] = condName;
      for (int v = 0; v < carried; ++v)
        bind[body.input(2 + v).name()] = state[size_t(v)];
      inlineBody(body, prefix, bind, out);
      for (int v = 0; v < carried; ++v)
        state[size_t(v)] = outerName(prefix, bind, body.output(1 + v).name());
      for (int s = 0; s < scans; ++s)
        scanParts[size_t(s)].push_back(outerName(prefix, bind, body.output(1 + carried + s).name()));
    }
    for (int v = 0; v < carried && v < node.output_size(); ++v)
      if (!node.output(v).empty())
        identity(state[size_t(v)], node.output(v), base + fmt::format("final{}", v), out);
    // Scan outputs: each iteration's value gains a leading axis, then Concat.
    const std::string axesName = base + "axis0";
    if (scans > 0) {
      auto *axes = graph.add_initializer();
      axes->set_name(axesName);
      axes->set_data_type(::onnx::TensorProto::INT64);
      axes->add_dims(1);
      axes->add_int64_data(0);
    }
    for (int s = 0; s < scans; ++s) {
      const int outIndex = carried + s;
      if (outIndex >= node.output_size() || node.output(outIndex).empty())
        continue;
      NodeProto *concat = nullptr;
      std::vector<std::string> parts;
      for (size_t i = 0; i < scanParts[size_t(s)].size(); ++i) {
        NodeProto *u = out.add_node();
        u->set_op_type("Unsqueeze");
        u->set_name(base + fmt::format("scan{}/unsqueeze{}", s, i));
        u->add_input(scanParts[size_t(s)][i]);
        const std::string name = base + fmt::format("scan{}/part{}", s, i);
        if (opset_ >= 13) {
          u->add_input(axesName);
        } else {
          auto *a = u->add_attribute();
          a->set_name("axes");
          a->set_type(::onnx::AttributeProto::INTS);
          a->add_ints(0);
        }
        u->add_output(name);
        parts.push_back(name);
      }
      concat = out.add_node();
      concat->set_op_type("Concat");
      concat->set_name(base + fmt::format("scan{}/concat", s));
      for (const auto &p : parts)
        concat->add_input(p);
      concat->add_output(node.output(outIndex));
      auto *axis = concat->add_attribute();
      axis->set_name("axis");
      axis->set_type(::onnx::AttributeProto::INT);
      axis->set_i(0);
    }
    log::get("onnx")->debug("{}: Loop '{}' unrolled {} times", path_, node.name(), trips);
  }

  // The static dims of a graph input, initializer or value_info; empty if unknown.
  std::vector<int64_t> staticDims(const std::string &name) const {
    const GraphProto &g = model_.graph();
    for (const auto &init : g.initializer())
      if (init.name() == name)
        return {init.dims().begin(), init.dims().end()};
    for (const auto *list : {&g.input(), &g.value_info(), &g.output()})
      for (const auto &v : *list)
        if (v.name() == name && v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
          std::vector<int64_t> dims;
          for (const auto &d : v.type().tensor_type().shape().dim()) {
            if (!d.has_dim_value() || d.dim_value() < 0)
              return {};
            dims.push_back(d.dim_value());
          }
          return dims;
        }
    return {};
  }

  std::vector<int64_t> intsAttr(const NodeProto &node, const char *name) const {
    for (const auto &a : node.attribute())
      if (a.name() == name)
        return {a.ints().begin(), a.ints().end()};
    return {};
  }

  // A node of `out`; attrs are integer attributes (a list for "axes").
  std::string addNode(GraphProto &out, const std::string &type, const std::vector<std::string> &inputs,
                      const std::string &output, const std::string &name, const char *attr = nullptr,
                      int64_t value = 0) {
    NodeProto *n = out.add_node();
    n->set_op_type(type);
    n->set_name(name);
    for (const auto &i : inputs)
      n->add_input(i);
    n->add_output(output);
    if (attr) {
      auto *a = n->add_attribute();
      a->set_name(attr);
      if (std::string(attr) == "axes") {
        a->set_type(::onnx::AttributeProto::INTS);
        a->add_ints(value);
      } else {
        a->set_type(::onnx::AttributeProto::INT);
        a->set_i(value);
      }
    }
    return output;
  }

  // An int64 constant: a Constant node, or before opset 9 (whose Constant is
  // float only) an initializer that is also a graph input, as models before
  // IR version 4 need.
  std::string int64Constant(GraphProto &out, const std::string &name, int64_t value, bool vector) {
    ::onnx::TensorProto *t = nullptr;
    if (opset_ >= 9) {
      NodeProto *n = out.add_node();
      n->set_op_type("Constant");
      n->set_name(name);
      n->add_output(name);
      auto *a = n->add_attribute();
      a->set_name("value");
      a->set_type(::onnx::AttributeProto::TENSOR);
      t = a->mutable_t();
    } else {
      t = model_.mutable_graph()->add_initializer();
      t->set_name(name);
      auto *input = model_.mutable_graph()->add_input();
      input->set_name(name);
      auto *type = input->mutable_type()->mutable_tensor_type();
      type->set_elem_type(::onnx::TensorProto::INT64);
      auto *shape = type->mutable_shape();
      if (vector)
        shape->add_dim()->set_dim_value(1);
    }
    t->set_data_type(::onnx::TensorProto::INT64);
    if (vector)
      t->add_dims(1);
    t->add_int64_data(value);
    return name;
  }

  // `parts` stacked along a new axis `axis` (Unsqueeze each, Concat).
  void stack(const std::vector<std::string> &parts, int64_t axis, const std::string &output, const std::string &base,
             GraphProto &out) {
    std::vector<std::string> unsqueezed;
    const std::string axes = opset_ >= 13 ? int64Constant(out, base + "axes", axis, true) : "";
    for (size_t i = 0; i < parts.size(); ++i) {
      const std::string name = base + fmt::format("part{}", i);
      if (opset_ >= 13)
        addNode(out, "Unsqueeze", {parts[i], axes}, name, base + fmt::format("unsqueeze{}", i));
      else
        addNode(out, "Unsqueeze", {parts[i]}, name, base + fmt::format("unsqueeze{}", i), "axes", axis);
      unsqueezed.push_back(name);
    }
    addNode(out, "Concat", unsqueezed, output, base + "concat", "axis", axis);
  }

  // Scan (opset 8: a leading batch axis and sequence_lens; 9+: per-input axes
  // and directions), unrolled over the sequence length of its scan inputs.
  void expandScan(const NodeProto &node, GraphProto &out) {
    const bool v8 = opset_ < 9;
    const GraphProto &body = graphAttr(node, "body");
    int64_t m = -1;
    for (const auto &a : node.attribute())
      if (a.name() == "num_scan_inputs")
        m = a.i();
    const int first = v8 ? 1 : 0; // opset 8's input 0 is sequence_lens
    const int n = node.input_size() - first - int(m);
    if (m < 1 || n < 0 || body.input_size() != n + m || body.output_size() < n)
      fail("{}: Scan node '{}': {} inputs, num_scan_inputs {} and a body of {} inputs and {} outputs do not agree",
           path_, node.name(), node.input_size(), m, body.input_size(), body.output_size());
    const int k = body.output_size() - n;
    auto perInput = [&](const char *name, int count) {
      std::vector<int64_t> v = intsAttr(node, name);
      if (v.empty())
        v.assign(size_t(count), 0);
      if (int(v.size()) != count)
        fail("{}: Scan node '{}': '{}' has {} values for {}", path_, node.name(), name, v.size(), count);
      return v;
    };
    const std::vector<int64_t> inAxes = v8 ? std::vector<int64_t>(size_t(m), 0) : perInput("scan_input_axes", int(m));
    const std::vector<int64_t> inDirs = perInput(v8 ? "directions" : "scan_input_directions", int(m));
    const std::vector<int64_t> outAxes = v8 ? std::vector<int64_t>(size_t(k), 0) : perInput("scan_output_axes", k);
    const std::vector<int64_t> outDirs = v8 ? std::vector<int64_t>(size_t(k), 0) : perInput("scan_output_directions", k);
    // Sequence length (and opset 8's batch) from the first scan input's static shape.
    const std::string &x0 = node.input(first + n);
    const std::vector<int64_t> dims = staticDims(x0);
    const int64_t rank = int64_t(dims.size()), axis0 = inAxes[0] < 0 ? inAxes[0] + rank - (v8 ? 1 : 0) : inAxes[0];
    if (dims.empty() || axis0 < 0 || axis0 + (v8 ? 1 : 0) >= rank)
      fail("{}: Scan node '{}': popc unrolls a Scan over its sequence length, which must be static: give scan "
           "input '{}' a static shape (--input-shape) or make it a graph input or initializer",
           path_, node.name(), x0);
    const int64_t batches = v8 ? dims[0] : 1, length = dims[size_t(axis0 + (v8 ? 1 : 0))];
    if (v8 && !node.input(0).empty())
      fail("{}: Scan node '{}': sequence_lens is not supported (every sequence runs the full length {})", path_,
           node.name(), length);
    if (length < 1 || batches * length > kMaxUnrolledIterations)
      fail("{}: Scan node '{}': {} iterations must be between 1 and {} to unroll", path_, node.name(),
           batches * length, kMaxUnrolledIterations);
    checkExpandedSize(out.node_size() + batches * length * (int64_t(body.node_size()) + m + 2),
                      fmt::format("unrolling Scan node '{}' {} times", node.name(), batches * length), path_);

    const std::string base = prefixOf(node);
    std::vector<std::vector<std::string>> finalStates(static_cast<size_t>(n)), batchScans(static_cast<size_t>(k));
    for (int64_t b = 0; b < batches; ++b) {
      const std::string bp = v8 ? fmt::format("{}b{}/", base, b) : base;
      const std::string bIndex = v8 ? int64Constant(out, bp + "batch", b, false) : "";
      std::vector<std::string> state, inputs;
      for (int s = 0; s < n; ++s) // opset 8: this batch item's state
        state.push_back(v8 ? addNode(out, "Gather", {node.input(first + s), bIndex}, bp + fmt::format("state{}", s),
                                     bp + fmt::format("state{}", s), "axis", 0)
                           : node.input(first + s));
      for (int j = 0; j < m; ++j)
        inputs.push_back(v8 ? addNode(out, "Gather", {node.input(first + n + j), bIndex}, bp + fmt::format("in{}", j),
                                      bp + fmt::format("in{}", j), "axis", 0)
                            : node.input(first + n + j));
      std::vector<std::vector<std::string>> scans(static_cast<size_t>(k));
      for (int64_t t = 0; t < length; ++t) {
        const std::string prefix = fmt::format("{}iter{}/", bp, t);
        std::map<std::string, std::string> bind;
        for (int s = 0; s < n; ++s)
          bind[body.input(s).name()] = state[size_t(s)];
        for (int j = 0; j < m; ++j) {
          const int64_t at = inDirs[size_t(j)] ? length - 1 - t : t;
          const std::string slice = prefix + fmt::format("slice{}", j);
          addNode(out, "Gather", {inputs[size_t(j)], int64Constant(out, slice + "/index", at, false)}, slice, slice,
                  "axis", inAxes[size_t(j)]);
          bind[body.input(n + j).name()] = slice;
        }
        inlineBody(body, prefix, bind, out);
        auto outer = [&](const std::string &name) {
          if (auto it = bind.find(name); it != bind.end())
            return it->second;
          return definedNames(body).count(name) ? prefix + name : name;
        };
        for (int s = 0; s < n; ++s)
          state[size_t(s)] = outer(body.output(s).name());
        for (int o = 0; o < k; ++o)
          scans[size_t(o)].push_back(outer(body.output(n + o).name()));
      }
      for (int s = 0; s < n; ++s)
        finalStates[size_t(s)].push_back(state[size_t(s)]);
      for (int o = 0; o < k; ++o) {
        std::vector<std::string> parts = scans[size_t(o)];
        if (outDirs[size_t(o)])
          std::reverse(parts.begin(), parts.end());
        const bool direct = !v8 && o + n < node.output_size();
        const std::string stacked = direct ? node.output(n + o) : bp + fmt::format("scan{}", o);
        if (direct && stacked.empty())
          continue;
        stack(parts, outAxes[size_t(o)], stacked, bp + fmt::format("scan{}/", o), out);
        batchScans[size_t(o)].push_back(stacked);
      }
    }
    for (int s = 0; s < n && s < node.output_size(); ++s)
      if (!node.output(s).empty()) {
        if (v8)
          stack(finalStates[size_t(s)], 0, node.output(s), base + fmt::format("final{}/", s), out);
        else
          identity(finalStates[size_t(s)][0], node.output(s), base + fmt::format("final{}", s), out);
      }
    if (v8) // opset 8: the batch items' scan outputs stacked again
      for (int o = 0; o < k && n + o < node.output_size(); ++o)
        if (!node.output(n + o).empty())
          stack(batchScans[size_t(o)], 0, node.output(n + o), base + fmt::format("scan{}/batch/", o), out);
    log::get("onnx")->debug("{}: Scan '{}' unrolled {} times", path_, node.name(), batches * length);
  }

  ::onnx::ModelProto &model_;
  int64_t opset_;
  const std::map<std::string, ir::Tensor> &frozen_;
  const ControlValueEvaluator &evaluate_;
  const std::string &path_;
  std::map<std::string, const ::onnx::TensorProto *> constants_;
  int current_ = 0; // index of the node being expanded
  const GraphProto *done_ = nullptr; // this round's nodes before it, expanded
};

} // namespace

int expandStaticControlFlow(::onnx::ModelProto &model, int64_t opset, const std::map<std::string, ir::Tensor> &frozen,
                            const ControlValueEvaluator &evaluate, const std::string &path) {
  return ControlFlowExpander(model, opset, frozen, evaluate, path).run();
}

} // namespace popc::onnx::detail
