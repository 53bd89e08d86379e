#include "compiler/ir/op_registry.h"

#include "compiler/ir/op_helpers.h"

#include <algorithm>
#include <cctype>
#include <set>

namespace popc::ir {

const OpRegistry &OpRegistry::instance() {
  // Built on first use: explicit calls, not static initialisers, so no
  // registration file can be dropped by the static-library linker.
  static const OpRegistry registry = [] {
    OpRegistry r;
    detail::registerElementwiseOps(r);
    detail::registerMatMulOps(r);
    detail::registerNnOps(r);
    detail::registerShapeOps(r);
    detail::registerMovementOps(r);
    detail::registerReduceOps(r);
    detail::registerIndexOps(r);
    detail::registerRecurrentOps(r);
    detail::registerQuantOps(r);
    return r;
  }();
  return registry;
}

const OpDef *OpRegistry::find(const std::string &type) const {
  auto it = defs_.find(type);
  return it == defs_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::types() const {
  std::vector<std::string> result;
  for (const auto &[type, def] : defs_)
    result.push_back(type);
  return result;
}

void OpRegistry::add(OpDef def) {
  POPC_ASSERT(def.infer);
  std::string type = def.type;
  if (!defs_.emplace(type, std::move(def)).second)
    fail("op registry: '{}' registered twice", type);
}

namespace {
// " (did you mean 'Relu'?)" for a misspelled op type: the registered type at
// the smallest edit distance, if it is at most 2 (case ignored; the first in
// sorted order on a tie); "" otherwise.
std::string didYouMean(const std::string &type) {
  auto lower = [](std::string s) {
    for (char &c : s)
      c = char(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  // Edits (insert, delete, substitute, swap two neighbours) from a to b.
  auto distance = [](const std::string &a, const std::string &b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i)
      d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j)
      d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  const std::string wanted = lower(type);
  std::string best;
  size_t bestDistance = 3;
  for (const std::string &known : OpRegistry::instance().types()) {
    const size_t d = distance(lower(known), wanted);
    if (d < bestDistance) {
      best = known;
      bestDistance = d;
    }
  }
  return best.empty() ? "" : fmt::format(" (did you mean '{}'?)", best);
}

std::vector<TensorInfo> runInfer(const Op &op, const Graph &graph) {
  using detail::failOp;
  const OpDef *def = op.domain.empty() || op.domain == "ai.onnx" || op.domain == kGraphcoreDomain
                         ? OpRegistry::instance().find(op.type)
                         : nullptr;
  if (def && (op.domain == kGraphcoreDomain) != def->graphcore)
    def = nullptr;
  if (!def)
    failOp(op, "unsupported operator{}", didYouMean(op.type));
  const int n = int(op.inputs.size());
  if (n < def->minInputs || (def->maxInputs != kVariadic && n > def->maxInputs)) {
    if (def->maxInputs == kVariadic)
      failOp(op, "expects at least {} inputs, got {}", def->minInputs, n);
    if (def->minInputs == def->maxInputs)
      failOp(op, "expects {} inputs, got {}", def->minInputs, n);
    failOp(op, "expects {} to {} inputs, got {}", def->minInputs, def->maxInputs, n);
  }
  for (int i = 0; i < def->minInputs; ++i)
    if (op.inputs[size_t(i)].empty())
      failOp(op, "required input {} is missing", i);
  for (size_t i = 0; i < op.inputs.size(); ++i)
    if (!op.inputs[i].empty() && !graph.hasTensor(op.inputs[i]))
      failOp(op, "input {} '{}' is not defined", i, op.inputs[i]);
  if (op.outputs.empty())
    failOp(op, "has no outputs");
  std::vector<TensorInfo> infos;
  try {
    infos = def->infer(op, graph);
  } catch (const Error &e) {
    // Attribute getters do not know the op: prefix it so every error names it.
    std::string prefix = describeOp(op) + ":";
    if (std::string_view(e.what()).substr(0, prefix.size()) == prefix)
      throw;
    e.rethrowWithPrefix(prefix + " ");
  }
  POPC_ASSERT(infos.size() == op.outputs.size());
  for (const auto &info : infos)
    for (int64_t d : info.shape)
      if (d < 0)
        failOp(op, "inferred a negative dimension in output shape {}", shapeToString(info.shape));
  return infos;
}
} // namespace

void inferAndSetOutputs(const Op &op, Graph &graph) {
  std::vector<TensorInfo> infos = runInfer(op, graph);
  for (size_t i = 0; i < op.outputs.size(); ++i) {
    const std::string &name = op.outputs[i];
    if (name.empty()) // optional output not requested
      continue;
    if (!graph.hasTensor(name)) {
      Tensor t;
      t.name = name;
      t.info = infos[i];
      t.kind = TensorKind::Intermediate;
      graph.addTensor(std::move(t));
      continue;
    }
    Tensor &t = graph.tensor(name);
    if (t.kind != TensorKind::Intermediate)
      detail::failOp(op, "output '{}' is already a graph {}", name,
                     t.kind == TensorKind::Input ? "input" : t.kind == TensorKind::Variable ? "variable" : "constant");
    t.info = infos[i];
  }
}

void inferGraph(Graph &graph) {
  // Inputs must be defined before use: graph inputs, constants, earlier outputs.
  std::set<std::string> defined;
  for (const auto &[name, t] : graph.tensors())
    if (t.kind != TensorKind::Intermediate)
      defined.insert(name);
  for (const auto &op : graph.ops()) {
    for (size_t i = 0; i < op->inputs.size(); ++i)
      if (!op->inputs[i].empty() && !defined.count(op->inputs[i])) {
        if (graph.producer(op->inputs[i]))
          detail::failOp(*op, "input {} '{}' is used before it is produced", i, op->inputs[i]);
        detail::failOp(*op, "input {} '{}' is not defined: no graph input, constant or op output has that name", i,
                       op->inputs[i]);
      }
    inferAndSetOutputs(*op, graph);
    for (const auto &out : op->outputs)
      if (!out.empty())
        defined.insert(out);
  }
  verifyGraph(graph);
}

void verifyGraph(const Graph &graph) {
  const std::string &g = graph.id();
  std::set<std::string> defined;
  for (const auto &[name, t] : graph.tensors()) {
    if (t.name != name)
      fail("graph '{}': tensor stored as '{}' is named '{}'", g, name, t.name);
    if (t.kind != TensorKind::Intermediate)
      defined.insert(name);
    if (hasData(t.kind) && t.data.size() != t.info.bytes())
      fail("graph '{}': constant or variable '{}' holds {} bytes, expected {} for {} {}", g, name,
           t.data.size(), t.info.bytes(), dtypeName(t.info.dtype), shapeToString(t.info.shape));
    if (!hasData(t.kind) && !t.data.empty())
      fail("graph '{}': tensor '{}' holds data but is neither a constant nor a variable", g, name);
  }
  std::set<std::string> inputSet;
  for (const auto &name : graph.inputs) {
    if (!graph.hasTensor(name))
      fail("graph '{}': input '{}' has no tensor", g, name);
    if (graph.tensor(name).kind != TensorKind::Input)
      fail("graph '{}': input '{}' is not an Input tensor", g, name);
    if (!inputSet.insert(name).second)
      fail("graph '{}': input '{}' listed twice", g, name);
  }
  for (const auto &[name, t] : graph.tensors())
    if (t.kind == TensorKind::Input && !inputSet.count(name))
      fail("graph '{}': Input tensor '{}' is not in the graph's input list", g, name);
  std::set<std::string> opNames;
  for (const auto &op : graph.ops()) {
    if (op->name.empty())
      fail("graph '{}': {} op has an empty name", g, op->type);
    if (!opNames.insert(op->name).second)
      fail("graph '{}': op name '{}' is used twice", g, op->name);
    for (size_t i = 0; i < op->inputs.size(); ++i)
      if (!op->inputs[i].empty() && !defined.count(op->inputs[i]))
        detail::failOp(*op, "input {} '{}' is not defined before use", i, op->inputs[i]);
    for (const auto &out : op->outputs) {
      if (out.empty())
        continue;
      if (!graph.hasTensor(out))
        detail::failOp(*op, "output '{}' has no tensor", out);
      if (graph.tensor(out).kind != TensorKind::Intermediate)
        detail::failOp(*op, "output '{}' is a graph input or constant", out);
      if (!defined.insert(out).second)
        detail::failOp(*op, "output '{}' is produced twice", out);
    }
  }
  for (const auto &name : graph.outputs)
    if (!defined.count(name))
      fail("graph '{}': output '{}' is not produced", g, name);
  std::set<std::pair<std::string, int64_t>> updated; // once per phase
  for (const auto &u : graph.updates) {
    if (!graph.hasTensor(u.variable) || graph.tensor(u.variable).kind != TensorKind::Variable)
      fail("graph '{}': update of '{}', which is not a variable", g, u.variable);
    if (!defined.count(u.value))
      fail("graph '{}': update of '{}' reads '{}', which is not produced", g, u.variable, u.value);
    if (graph.tensor(u.value).info != graph.tensor(u.variable).info)
      fail("graph '{}': update of '{}' ({} {}) reads '{}' of another type ({} {})", g, u.variable,
           dtypeName(graph.tensor(u.variable).info.dtype), shapeToString(graph.tensor(u.variable).info.shape), u.value,
           dtypeName(graph.tensor(u.value).info.dtype), shapeToString(graph.tensor(u.value).info.shape));
    if (!updated.insert({u.variable, u.phase}).second)
      fail("graph '{}': variable '{}' is updated twice in phase {}", g, u.variable, u.phase);
  }
}

Shape broadcastShapes(const Shape &a, const Shape &b) {
  const size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da == db || db == 1)
      out[i] = da;
    else if (da == 1)
      out[i] = db;
    else
      fail("shapes {} and {} are not broadcastable (dim {}: {} vs {})", shapeToString(a),
           shapeToString(b), i, da, db);
  }
  return out;
}

} // namespace popc::ir
