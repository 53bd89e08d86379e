// Ops popc has no native lowering for but which ONNX defines as functions
// (LayerNormalization, NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss,
// CastLike, GreaterOrEqual, MeanVarianceNormalization, ...) are replaced by
// their ONNX function bodies before import — the same expansion the backend
// suite's "_expanded" tests spell out — so every op the body uses goes
// through the normal passes and lowerings.
#include "compiler/ir/op_registry.h"
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"
#include "support/log.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <optional>

namespace popc::onnx::detail {

namespace {

bool isAiOnnx(const std::string &domain) { return domain.empty() || domain == "ai.onnx"; }

// Types of every tensor the graph states (inputs, initializers, value_info,
// outputs); ONNX shape inference fills in the rest on demand.
class TypeTable {
public:
  explicit TypeTable(const ::onnx::ModelProto &model) : model_(model) { collect(model.graph()); }

  std::optional<::onnx::TypeProto> find(const std::string &name) {
    if (auto it = types_.find(name); it != types_.end())
      return it->second;
    if (!inferred_) {
      inferred_ = true;
      try {
        ::onnx::ModelProto copy = model_;
        ::onnx::shape_inference::InferShapes(copy);
        collect(copy.graph());
      } catch (const std::exception &) {
        // Types stay unknown; the expansion below reports the op.
      }
      return find(name);
    }
    return std::nullopt;
  }

  void update(const ::onnx::ModelProto &model) {
    model_ = model;
    inferred_ = false;
  }

private:
  void collect(const ::onnx::GraphProto &g) {
    for (const auto &vi : g.input())
      types_.emplace(vi.name(), vi.type());
    for (const auto &vi : g.value_info())
      types_.emplace(vi.name(), vi.type());
    for (const auto &vi : g.output())
      types_.emplace(vi.name(), vi.type());
    for (const auto &init : g.initializer()) {
      ::onnx::TypeProto t;
      t.mutable_tensor_type()->set_elem_type(init.data_type());
      for (int64_t d : init.dims())
        t.mutable_tensor_type()->mutable_shape()->add_dim()->set_dim_value(d);
      types_.emplace(init.name(), t);
    }
  }

  ::onnx::ModelProto model_;
  std::map<std::string, ::onnx::TypeProto> types_;
  bool inferred_ = false;
};

// The node with every attribute its schema defaults filled in: function
// bodies refer to attributes by name and do not see schema defaults.
::onnx::NodeProto withDefaults(const ::onnx::NodeProto &node, const ::onnx::OpSchema &schema) {
  ::onnx::NodeProto copy = node;
  for (const auto &[name, attr] : schema.attributes()) {
    if (!attr.default_value.has_name() && attr.default_value.type() == ::onnx::AttributeProto::UNDEFINED)
      continue;
    bool present = false;
    for (const auto &a : node.attribute())
      present |= a.name() == name;
    if (!present) {
      auto *a = copy.add_attribute();
      *a = attr.default_value;
      a->set_name(name);
    }
  }
  return copy;
}

// The function body of `node`, or nullopt if ONNX defines none for it.
std::optional<::onnx::FunctionProto> functionBody(const ::onnx::NodeProto &node, const ::onnx::OpSchema &schema,
                                                  TypeTable &types, const std::string &path) {
  if (schema.HasFunction() && schema.GetFunction())
    return *schema.GetFunction();
  if (!schema.HasContextDependentFunction())
    return std::nullopt;
  std::vector<::onnx::TypeProto> inputTypes;
  for (const auto &in : node.input()) {
    if (in.empty()) {
      inputTypes.emplace_back();
      continue;
    }
    auto t = types.find(in);
    if (!t)
      fail("{}: {} node '{}': the type of input '{}' is unknown, so its ONNX function body cannot be built",
           path, node.op_type(), node.name(), in);
    inputTypes.push_back(*t);
  }
  ::onnx::FunctionBodyBuildContextImpl ctx(node, inputTypes);
  ::onnx::FunctionProto body;
  if (!schema.BuildContextDependentFunction(ctx, body))
    return std::nullopt;
  return body;
}

// Appends the body of `func` called by `node` to `out`: formal inputs and
// outputs become the node's tensors, internal tensors get `prefix`, and
// attribute references (ref_attr_name) take the node's attribute values.
// (onnx 1.12's FunctionExpandHelper crashes on some context-dependent bodies.)
void inlineFunction(const ::onnx::NodeProto &node, const ::onnx::FunctionProto &func, ::onnx::GraphProto &out,
                    const std::string &prefix, const std::string &path) {
  std::map<std::string, std::string> rename;
  for (int i = 0; i < func.input_size(); ++i)
    rename[func.input(i)] = i < node.input_size() ? node.input(i) : "";
  for (int i = 0; i < func.output_size(); ++i)
    rename[func.output(i)] = i < node.output_size() ? node.output(i) : "";
  auto mapName = [&](const std::string &name) {
    if (name.empty())
      return name;
    auto it = rename.find(name);
    return it != rename.end() ? it->second : prefix + name;
  };
  std::map<std::string, const ::onnx::AttributeProto *> attrs;
  for (const auto &a : node.attribute())
    attrs[a.name()] = &a;
  for (const auto &bodyNode : func.node()) {
    ::onnx::NodeProto n = bodyNode;
    n.set_name(prefix + (bodyNode.name().empty() ? bodyNode.op_type() : bodyNode.name()));
    for (auto &in : *n.mutable_input())
      in = mapName(in);
    for (auto &o : *n.mutable_output())
      o = mapName(o);
    n.clear_attribute();
    for (const auto &a : bodyNode.attribute()) {
      if (a.has_g() || a.graphs_size())
        fail("{}: {} node '{}': its ONNX function body has subgraphs, which popc cannot inline", path,
             node.op_type(), node.name());
      if (a.ref_attr_name().empty()) {
        *n.add_attribute() = a;
        continue;
      }
      auto it = attrs.find(a.ref_attr_name());
      if (it == attrs.end())
        continue; // unset optional attribute: the body op's own default applies
      auto *copy = n.add_attribute();
      *copy = *it->second;
      copy->set_name(a.name());
    }
    // The body runs where the node was placed (its IPU and pipeline stage).
    for (const char *placement : {"__ipu_number", "__pipeline_stage"})
      if (auto it = attrs.find(placement); it != attrs.end())
        *n.add_attribute() = *it->second;
    *out.add_node() = std::move(n);
  }
}

} // namespace

int expandFunctionOps(::onnx::ModelProto &model, int64_t opset, const std::string &path) {
  const auto &registry = ir::OpRegistry::instance();
  TypeTable types(model);
  int expanded = 0;
  // Bodies may use further function ops: expand level by level.
  for (int round = 0; round < 8; ++round) {
    ::onnx::GraphProto &graph = *model.mutable_graph();
    bool changed = false;
    ::onnx::GraphProto rebuilt;
    for (int i = 0; i < graph.node_size(); ++i) {
      const ::onnx::NodeProto &node = graph.node(i);
      const ::onnx::OpSchema *schema =
          isAiOnnx(node.domain()) && !registry.find(node.op_type()) && !resolvedAtImport(node)
              ? ::onnx::OpSchemaRegistry::Schema(node.op_type(), int(opset), "")
              : nullptr;
      if (!schema) {
        *rebuilt.add_node() = node;
        continue;
      }
      const ::onnx::NodeProto call = withDefaults(node, *schema);
      const std::optional<::onnx::FunctionProto> body = functionBody(call, *schema, types, path);
      if (!body) {
        *rebuilt.add_node() = node;
        continue;
      }
      const std::string prefix = (node.name().empty() ? node.op_type() + std::to_string(i) : node.name()) + "/";
      inlineFunction(call, *body, rebuilt, prefix, path);
      log::get("onnx")->debug("{}: expanded {} '{}' into its ONNX function body ({} nodes)", path,
                              node.op_type(), node.name(), body->node_size());
      changed = true;
      ++expanded;
    }
    if (!changed)
      break;
    checkExpandedSize(rebuilt.node_size(), "expanding ONNX function bodies", path);
    graph.clear_node();
    for (auto &n : *rebuilt.mutable_node())
      *graph.add_node() = std::move(n);
    types.update(model);
  }
  return expanded;
}

} // namespace popc::onnx::detail
