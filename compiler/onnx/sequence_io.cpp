// Sequence and optional graph inputs, fixed at compile time the way
// --input-shape fixes dynamic dimensions: a sequence input `x` given N
// elements (--sequence-input x=N) becomes the tensor inputs x.0 ... x.N-1 and
// a SequenceConstruct (SequenceEmpty for N = 0) that rebuilds `x` for the
// sequence resolver; an optional input named by --optional-absent becomes an
// empty Optional node; any other optional input is present, an ordinary
// tensor (or sequence) input. The executable only ever sees tensors.
// (Sequence and optional outputs are flattened by the resolver, sequences.cpp.)
#include "compiler/onnx/importer.h"
#include "compiler/onnx/onnx_internal.h"

#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <charconv>
#include <set>

namespace popc::onnx {

std::string sequenceElementName(const std::string &name, size_t index) { return fmt::format("{}.{}", name, index); }

std::map<std::string, int64_t> parseSequenceLengths(const std::vector<std::string> &specs) {
  std::map<std::string, int64_t> result;
  for (const auto &spec : specs) {
    const auto eq = spec.rfind('=');
    const std::string count = eq == std::string::npos ? "" : spec.substr(eq + 1);
    int64_t n = -1;
    auto [ptr, ec] = std::from_chars(count.data(), count.data() + count.size(), n);
    if (eq == std::string::npos || eq == 0 || count.empty() || ec != std::errc() ||
        ptr != count.data() + count.size() || n < 0)
      fail("--sequence-input '{}': expected name=N with N >= 0 tensors in the sequence, e.g. x=3", spec);
    if (!result.emplace(spec.substr(0, eq), n).second)
      fail("--sequence-input: input '{}' is given twice", spec.substr(0, eq));
  }
  return result;
}

namespace detail {

int lowerSequenceAndOptionalInputs(::onnx::ModelProto &model, const std::map<std::string, int64_t> &lengths,
                                   const std::set<std::string> &absent, const std::string &path) {
  ::onnx::GraphProto &graph = *model.mutable_graph();
  const auto real = realInputNames(graph);
  const std::set<std::string> realSet(real.begin(), real.end());
  auto typeName = [](const ::onnx::TypeProto &t) {
    return t.has_sequence_type() ? "a sequence" : t.has_optional_type() ? "an optional" : "a tensor";
  };
  std::map<std::string, const ::onnx::TypeProto *> types;
  for (const auto &in : graph.input())
    if (realSet.count(in.name()))
      types[in.name()] = &in.type();
  for (const auto &[name, n] : lengths) {
    auto it = types.find(name);
    if (it == types.end())
      fail("{}: --sequence-input names unknown input '{}'; the model's inputs are: {}", path, name,
           fmt::join(real, ", "));
    const auto &t = *it->second;
    if (!t.has_sequence_type() && !(t.has_optional_type() && t.optional_type().elem_type().has_sequence_type()))
      fail("{}: --sequence-input {}={}: input '{}' is {}, not a sequence", path, name, n, name, typeName(t));
  }
  for (const auto &name : absent) {
    auto it = types.find(name);
    if (it == types.end())
      fail("{}: --optional-absent names unknown input '{}'; the model's inputs are: {}", path, name,
           fmt::join(real, ", "));
    if (!it->second->has_optional_type())
      fail("{}: --optional-absent {}: input '{}' is {}, not an optional", path, name, name, typeName(*it->second));
    if (lengths.count(name))
      fail("{}: input '{}' is given both --optional-absent and --sequence-input; choose one", path, name);
  }

  const std::set<std::string> taken = definedNames(graph);
  ::onnx::GraphProto rebuilt; // the new inputs, then the nodes that rebuild sequences/optionals
  std::vector<::onnx::NodeProto> prologue;
  int lowered = 0;
  for (const auto &in : graph.input()) {
    if (!realSet.count(in.name())) {
      *rebuilt.add_input() = in;
      continue;
    }
    const std::string &name = in.name();
    const ::onnx::TypeProto *type = &in.type();
    if (type->has_optional_type()) {
      ++lowered;
      if (absent.count(name)) {
        ::onnx::NodeProto n;
        n.set_op_type("Optional");
        n.set_name(name + "/absent");
        n.add_output(name);
        auto *a = n.add_attribute();
        a->set_name("type");
        a->set_type(::onnx::AttributeProto::TYPE_PROTO);
        *a->mutable_tp() = type->optional_type().elem_type();
        prologue.push_back(std::move(n));
        continue;
      }
      type = &type->optional_type().elem_type(); // present: the value itself
      if (type->has_tensor_type()) {
        auto *v = rebuilt.add_input();
        v->set_name(name);
        *v->mutable_type() = *type;
        continue;
      }
    }
    if (!type->has_sequence_type()) {
      if (type->has_tensor_type()) {
        *rebuilt.add_input() = in;
        continue;
      }
      fail("{}: input '{}' is neither a tensor, a sequence of tensors nor an optional of one", path, name);
    }
    auto len = lengths.find(name);
    if (len == lengths.end())
      fail("{}: input '{}' is a sequence; popc fixes its length at compile time: give it with --sequence-input "
           "{}=N (its tensors are then the inputs {}, {}, ...)",
           path, name, name, sequenceElementName(name, 0), sequenceElementName(name, 1));
    const auto &elem = type->sequence_type().elem_type();
    if (!elem.has_tensor_type())
      fail("{}: input '{}' is a sequence of non-tensors, which popc cannot carry", path, name);
    ++lowered;
    ::onnx::NodeProto n;
    n.set_name(name + "/sequence");
    n.add_output(name);
    if (len->second == 0) {
      n.set_op_type("SequenceEmpty");
      auto *a = n.add_attribute();
      a->set_name("dtype");
      a->set_type(::onnx::AttributeProto::INT);
      a->set_i(elem.tensor_type().elem_type());
    } else {
      n.set_op_type("SequenceConstruct");
    }
    for (int64_t i = 0; i < len->second; ++i) {
      const std::string element = sequenceElementName(name, size_t(i));
      if (taken.count(element))
        fail("{}: sequence input '{}': element name '{}' is already a tensor of the model", path, name, element);
      auto *v = rebuilt.add_input();
      v->set_name(element);
      *v->mutable_type() = elem;
      n.add_input(element);
    }
    prologue.push_back(std::move(n));
  }
  if (!lowered)
    return 0;
  graph.clear_input();
  for (auto &v : *rebuilt.mutable_input())
    *graph.add_input() = std::move(v);
  ::onnx::GraphProto nodes;
  for (auto &n : prologue)
    *nodes.add_node() = std::move(n);
  for (const auto &n : graph.node())
    *nodes.add_node() = n;
  graph.clear_node();
  for (auto &n : *nodes.mutable_node())
    *graph.add_node() = std::move(n);
  return lowered;
}

} // namespace detail
} // namespace popc::onnx
