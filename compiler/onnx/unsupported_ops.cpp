#include "compiler/ir/op_registry.h"
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"

#include <fmt/ranges.h>

#include <set>

namespace popc::onnx::detail {

std::set<std::string> definedNames(const ::onnx::GraphProto &graph) {
  std::set<std::string> names;
  for (const auto &v : graph.input())
    names.insert(v.name());
  for (const auto &t : graph.initializer())
    names.insert(t.name());
  for (const auto &n : graph.node())
    for (const auto &o : n.output())
      names.insert(o);
  return names;
}

std::vector<std::string> nodeNames(const ::onnx::GraphProto &graph) {
  std::vector<std::string> names;
  std::set<std::string> used;
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    std::string base = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
    std::string name = base;
    for (int k = 1; used.count(name); ++k) // IR op names must be unique
      name = fmt::format("{}_{}", base, k);
    used.insert(name);
    names.push_back(name);
  }
  return names;
}

namespace {
bool isAiOnnx(const std::string &domain) { return domain.empty() || domain == "ai.onnx"; }
} // namespace

// Oldest and newest ai.onnx opsets accepted (ONNX 1.12 knows up to 17).
constexpr int64_t kMinOpset = 1, kMaxOpset = 17;

int64_t aiOnnxOpset(const ::onnx::ModelProto &model, const std::string &path) {
  for (const auto &imp : model.opset_import())
    if (isAiOnnx(imp.domain())) {
      if (imp.version() < kMinOpset || imp.version() > kMaxOpset)
        fail("{}: ai.onnx opset {} is not supported (popc supports opset 7 to {}); convert the "
             "model with onnx.version_converter",
             path, imp.version(), kMaxOpset);
      return imp.version();
    }
  return 0; // reported after the unsupported-op check, which is more useful
}

void requireAiOnnxOpset(int64_t opset, const std::string &path) {
  if (opset == 0)
    fail("{}: model has no opset_import for the default ai.onnx domain", path);
}

void checkSupportedOps(const ::onnx::ModelProto &model, const std::vector<std::string> &names,
                       int64_t opset, const std::string &path) {
  // Op type (with its domain) → node names, in order of first appearance.
  std::vector<std::pair<std::string, std::vector<std::string>>> unsupported;
  std::vector<std::string> legacy;
  const auto &registry = ir::OpRegistry::instance();
  const auto &graph = model.graph();
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    const bool known = isAiOnnx(node.domain()) && registry.find(node.op_type()) != nullptr;
    if (known) {
      // Before opset 7 these ops had legacy broadcast / consumed_inputs / is_test semantics.
      static const std::set<std::string> kLegacy = {"Add", "Sub", "Mul", "Div", "Gemm",
                                                    "BatchNormalization", "Dropout"};
      if (opset > 0 && opset < 7 && kLegacy.count(node.op_type()) &&
          std::find(legacy.begin(), legacy.end(), node.op_type()) == legacy.end())
        legacy.push_back(node.op_type());
      continue;
    }
    const std::string type =
        isAiOnnx(node.domain()) ? node.op_type() : node.domain() + "::" + node.op_type();
    auto it = std::find_if(unsupported.begin(), unsupported.end(),
                           [&](const auto &entry) { return entry.first == type; });
    if (it == unsupported.end())
      unsupported.push_back({type, {names[size_t(i)]}});
    else
      it->second.push_back(names[size_t(i)]);
  }
  if (!unsupported.empty()) {
    // ai.onnx ops under the model's opset; ops of other domains under their own
    // domain and version (popc implements only ai.onnx and its training ops).
    std::vector<std::string> parts, custom;
    for (const auto &[type, nodes] : unsupported) {
      const size_t sep = type.find("::");
      if (sep == std::string::npos) {
        parts.push_back(fmt::format("{} (nodes: {})", type, fmt::join(nodes, ", ")));
        continue;
      }
      const std::string domain = type.substr(0, sep);
      int64_t version = 0;
      for (const auto &imp : model.opset_import())
        if (imp.domain() == domain)
          version = imp.version();
      custom.push_back(fmt::format("{} (domain {} version {}, which popc does not implement; nodes: {})",
                                   type.substr(sep + 2), domain, version, fmt::join(nodes, ", ")));
    }
    std::string message;
    if (!parts.empty())
      message = fmt::format("{}: {}", opset ? fmt::format(" (ai.onnx opset {})", opset) : "", fmt::join(parts, "; "));
    if (!custom.empty())
      message += fmt::format("{} {}", parts.empty() ? ":" : ";", fmt::join(custom, "; "));
    fail("{}: unsupported operators{}", path, message);
  }
  if (!legacy.empty())
    fail("{}: opset {} versions of {} are not supported (popc supports opset 7 to {}); convert "
         "the model with onnx.version_converter to opset 13",
         path, opset, fmt::join(legacy, ", "), kMaxOpset);
}

} // namespace popc::onnx::detail
