#include "compiler/ir/printer.h"

#include "compiler/ir/op_helpers.h"
#include "compiler/ir/text_syntax.h"

#include <fmt/format.h>

namespace popc::ir {

namespace {
using detail::shortDType;

std::string typeStr(const TensorInfo &info) { return shortDType(info.dtype) + shapeToString(info.shape); }

// Shortest round-trip text that still reads as a float ("1.0", not "1").
std::string floatStr(double d) {
  std::string s = fmt::format("{}", d);
  if (s.find_first_of(".eni") == std::string::npos)
    s += ".0";
  return s;
}

template <typename T, typename F> std::string listStr(const std::vector<T> &v, F each) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? "," : "") + each(v[i]);
  return s + "]";
}

using text::quote;

constexpr int64_t kMaxPrintedValues = 8;

// Values of a small constant, e.g. "[1,-1]"; empty when too large to print.
std::string valuesStr(const Tensor &t) {
  if (t.info.elements() > kMaxPrintedValues || t.data.size() != t.info.bytes())
    return "";
  if (isFloatingPoint(t.info.dtype))
    return listStr(t.toDoubles(), floatStr);
  return listStr(t.toInt64s(), [](int64_t i) { return std::to_string(i); });
}

std::string attrStr(const AttrValue &v) {
  struct Visitor {
    std::string operator()(int64_t i) const { return std::to_string(i); }
    std::string operator()(double d) const { return floatStr(d); }
    std::string operator()(const std::string &s) const { return quote(s); }
    std::string operator()(const std::vector<int64_t> &v) const {
      return listStr(v, [](int64_t i) { return std::to_string(i); });
    }
    std::string operator()(const std::vector<double> &v) const { return listStr(v, floatStr); }
    std::string operator()(const std::vector<std::string> &v) const { return listStr(v, quote); }
    std::string operator()(const std::shared_ptr<const Tensor> &t) const {
      if (!t)
        return "tensor<null>";
      return "tensor<" + typeStr(t->info) + ">" + valuesStr(*t);
    }
  };
  return std::visit(Visitor{}, v);
}

std::string tensorRef(const std::string &name) { return name.empty() ? "_" : "%" + text::name(name); }

std::string opLine(const Op &op, const Graph &graph) {
  std::string s;
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    s += i ? ", " : "";
    s += tensorRef(op.outputs[i]);
    if (!op.outputs[i].empty() && graph.hasTensor(op.outputs[i]))
      s += ": " + typeStr(graph.tensor(op.outputs[i]).info);
  }
  s += " = ";
  if (!op.domain.empty())
    s += op.domain + "::";
  s += op.type + "[name=" + text::name(op.name);
  if (op.ipu != 0)
    s += fmt::format(", ipu={}", op.ipu);
  if (op.pipelineStage >= 0)
    s += fmt::format(", stage={}", op.pipelineStage);
  if (op.phase != 0)
    s += fmt::format(", phase={}", op.phase);
  s += "](";
  for (size_t i = 0; i < op.inputs.size(); ++i)
    s += (i ? ", " : "") + tensorRef(op.inputs[i]);
  s += ")";
  if (!op.attrs.all().empty()) {
    s += " {";
    bool first = true;
    for (const auto &[name, value] : op.attrs.all()) {
      s += (first ? "" : ", ") + name + "=" + attrStr(value);
      first = false;
    }
    s += "}";
  }
  return s;
}
} // namespace

std::string printGraph(const Graph &graph) {
  std::string s = fmt::format("graph {} (opset {}) {{\n", text::name(graph.id()), graph.opset);
  for (const auto &name : graph.inputs)
    s += fmt::format("  input {}: {}\n", tensorRef(name),
                     graph.hasTensor(name) ? typeStr(graph.tensor(name).info) : "?");
  for (const auto &[name, t] : graph.tensors()) {
    if (!hasData(t.kind))
      continue;
    std::string values = valuesStr(t);
    s += fmt::format("  {} {}: {}{}\n", t.kind == TensorKind::Variable ? "var" : "const", tensorRef(name), typeStr(t.info),
                     values.empty() ? "" : " = " + values);
  }
  for (const auto &op : graph.ops())
    s += "  " + opLine(*op, graph) + "\n";
  for (const auto &name : graph.outputs)
    s += fmt::format("  output {}\n", tensorRef(name));
  for (const auto &u : graph.updates)
    s += fmt::format("  update {} = {}{}\n", tensorRef(u.variable), tensorRef(u.value),
                     u.phase ? fmt::format(" phase {}", u.phase) : "");
  return s + "}\n";
}

std::string printIr(const Ir &ir) {
  std::string s = fmt::format("ir {} (opset {})\n", quote(ir.modelName), ir.opsetVersion);
  s += printGraph(ir.main);
  for (const auto &[name, g] : ir.subgraphs) // std::map: sorted, deterministic
    s += printGraph(g);
  return s;
}

std::string graphToDot(const Graph &graph) {
  std::string s = fmt::format("digraph {} {{\n  rankdir=TB;\n  node [fontname=\"monospace\"];\n",
                              quote(graph.id()));
  auto tensorNode = [](const std::string &name) { return quote("t:" + name); };
  auto opNode = [](size_t i) { return quote(fmt::format("op:{}", i)); };
  auto edgeLabel = [&](const std::string &name) {
    return quote(name + "\n" + typeStr(graph.tensor(name).info));
  };
  for (const auto &name : graph.inputs)
    s += fmt::format("  {} [shape=ellipse, style=filled, fillcolor=lightblue, label={}];\n",
                     tensorNode(name), quote(name));
  for (const auto &[name, t] : graph.tensors())
    if (hasData(t.kind))
      s += fmt::format("  {} [shape=note, label={}];\n", tensorNode(name),
                       quote(name + "\n" + typeStr(t.info)));
  const auto &ops = graph.ops();
  for (size_t i = 0; i < ops.size(); ++i) {
    std::string label = ops[i]->type + "\n" + ops[i]->name;
    if (ops[i]->ipu != 0)
      label += fmt::format("\nipu {}", ops[i]->ipu);
    s += fmt::format("  {} [shape=box, label={}];\n", opNode(i), quote(label));
  }
  // Where each tensor comes from: a producing op, or its own node (inputs, constants).
  auto source = [&](const std::string &name) -> std::string {
    if (auto p = graph.producer(name))
      return opNode(*p);
    return tensorNode(name);
  };
  for (size_t i = 0; i < ops.size(); ++i)
    for (const auto &in : ops[i]->inputs)
      if (!in.empty() && graph.hasTensor(in))
        s += fmt::format("  {} -> {} [label={}];\n", source(in), opNode(i), edgeLabel(in));
  for (const auto &name : graph.outputs) {
    if (!graph.hasTensor(name))
      continue;
    s += fmt::format("  {} [shape=ellipse, style=filled, fillcolor=lightgreen, label={}];\n",
                     quote("out:" + name), quote(name));
    s += fmt::format("  {} -> {} [label={}];\n", source(name), quote("out:" + name), edgeLabel(name));
  }
  return s + "}\n";
}

} // namespace popc::ir
