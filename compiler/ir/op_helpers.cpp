#include "compiler/ir/op_helpers.h"

#include "compiler/ir/host_eval.h"

#include <cstring>
#include <set>

namespace popc::ir {

std::string describeOp(const Op &op) {
  std::string type = op.domain.empty() ? op.type : op.domain + "::" + op.type;
  return fmt::format("{} '{}'", type, op.name);
}

Tensor constantOpTensor(const Op &op) {
  using detail::failOp;
  if (op.type != "Constant")
    failOp(op, "not a Constant op");
  if (op.outputs.size() != 1)
    failOp(op, "expected 1 output, got {}", op.outputs.size());
  Tensor t;
  t.name = op.outputs[0];
  t.kind = TensorKind::Constant;
  const auto &attrs = op.attrs;
  int count = 0;
  for (const char *name : {"value", "value_float", "value_floats", "value_int", "value_ints",
                           "value_string", "value_strings", "sparse_value"})
    count += attrs.has(name) ? 1 : 0;
  if (count != 1)
    failOp(op, "needs exactly one value attribute (value, value_float, value_floats, value_int, "
               "value_ints), found {}", count);
  auto put = [&](const void *src, size_t n) {
    t.data.resize(n);
    if (n)
      std::memcpy(t.data.data(), src, n);
  };
  if (attrs.has("value")) {
    auto v = attrs.getTensor("value");
    if (!v)
      failOp(op, "attribute 'value' holds no tensor");
    t.info = v->info;
    if (v->data.size() != v->info.bytes())
      failOp(op, "attribute 'value' holds {} bytes, expected {}", v->data.size(), v->info.bytes());
    t.data = v->data;
  } else if (attrs.has("value_float")) {
    float f = float(attrs.getFloat("value_float", 0));
    t.info = {DType::F32, {}};
    put(&f, 4);
  } else if (attrs.has("value_floats")) {
    auto d = attrs.getFloats("value_floats");
    std::vector<float> f(d.begin(), d.end());
    t.info = {DType::F32, {int64_t(f.size())}};
    put(f.data(), f.size() * 4);
  } else if (attrs.has("value_int")) {
    int64_t i = attrs.getInt("value_int");
    t.info = {DType::I64, {}};
    put(&i, 8);
  } else if (attrs.has("value_ints")) {
    auto v = attrs.getInts("value_ints");
    t.info = {DType::I64, {int64_t(v.size())}};
    put(v.data(), v.size() * 8);
  } else {
    failOp(op, "string and sparse constants are not supported");
  }
  return t;
}

namespace {
// Evaluates the producer of `t` on the host when all its inputs are known at
// compile time (recursively): shape subgraphs such as
// Shape→Gather→Unsqueeze→Concat feeding a Reshape are known while the graph
// is built, before constant folding. Small tensors only (shape-like values).
// `budget` bounds the ops visited per query, so a query on a long run-time
// chain (or a constant DAG with many shared nodes) stays cheap.
std::optional<Tensor> evaluatedValue(const Graph &graph, const Tensor &t, int &budget) {
  constexpr size_t kMaxBytes = size_t(1) << 20;
  if (t.info.bytes() > kMaxBytes || --budget < 0)
    return std::nullopt;
  auto p = graph.producer(t.name);
  if (!p)
    return std::nullopt;
  const Op &op = *graph.ops()[*p];
  if (!(op.domain.empty() || op.domain == "ai.onnx"))
    return std::nullopt;
  if (op.type == "Constant")
    return constantOpTensor(op);
  if (!hostEvalSupports(op.type))
    return std::nullopt;
  std::vector<Tensor> values; // owns evaluated inputs (reserved: pointers stay valid)
  values.reserve(op.inputs.size());
  std::vector<const Tensor *> inputs;
  for (const std::string &in : op.inputs) {
    if (in.empty() || !graph.hasTensor(in)) {
      inputs.push_back(nullptr);
      continue;
    }
    const Tensor &src = graph.tensor(in);
    if (src.kind == TensorKind::Constant || hostEvalNeedsOnlyInfo(op.type)) {
      inputs.push_back(&src);
      continue;
    }
    auto v = evaluatedValue(graph, src, budget);
    if (!v)
      return std::nullopt;
    values.push_back(std::move(*v));
    inputs.push_back(&values.back());
  }
  std::vector<TensorInfo> infos;
  size_t which = 0;
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    const bool known = !op.outputs[k].empty() && graph.hasTensor(op.outputs[k]);
    infos.push_back(known ? graph.tensor(op.outputs[k]).info : TensorInfo{});
    if (op.outputs[k] == t.name)
      which = k;
  }
  auto r = hostEvaluate(op, graph, inputs, infos);
  if (!r || r->size() <= which || (*r)[which].size() != t.info.bytes())
    return std::nullopt;
  Tensor out;
  out.name = t.name;
  out.info = t.info;
  out.kind = TensorKind::Constant;
  out.data = std::move((*r)[which]);
  return out;
}
} // namespace

std::optional<Tensor> constantValue(const Graph &graph, const std::string &name) {
  if (!graph.hasTensor(name))
    return std::nullopt;
  const Tensor &t = graph.tensor(name);
  if (t.kind == TensorKind::Constant)
    return t;
  if (t.kind == TensorKind::Intermediate) {
    int budget = 256;
    return evaluatedValue(graph, t, budget);
  }
  return std::nullopt;
}

namespace detail {

const TensorInfo &inputInfo(const Op &op, const Graph &graph, size_t i) {
  if (!op.hasInput(i))
    failOp(op, "input {} is missing", i);
  if (!graph.hasTensor(op.inputs[i]))
    failOp(op, "input {} '{}' is not defined", i, op.inputs[i]);
  return graph.tensor(op.inputs[i]).info;
}

namespace {
// Graph inputs whose data `name` depends on, when it is computed from them and
// constants by ops the host evaluator runs; false otherwise.
bool dataInputsOf(const Graph &graph, const std::string &name, std::set<std::string> &inputs, int &budget) {
  if (--budget < 0)
    return false;
  const Tensor &t = graph.tensor(name);
  if (t.kind == TensorKind::Constant)
    return true;
  if (t.kind == TensorKind::Input) {
    inputs.insert(name);
    return true;
  }
  auto p = graph.producer(name);
  if (!p)
    return false;
  const Op &producer = *graph.ops()[*p];
  if (!(producer.domain.empty() || producer.domain == "ai.onnx") || !hostEvalSupports(producer.type))
    return false;
  if (hostEvalNeedsOnlyInfo(producer.type))
    return true;
  for (const std::string &in : producer.inputs)
    if (!in.empty() && (!graph.hasTensor(in) || !dataInputsOf(graph, in, inputs, budget)))
      return false;
  return true;
}
} // namespace

void failNotConstant(const Op &op, const Graph &graph, size_t i, const char *what) {
  const std::string &name = op.inputs[i];
  const std::string message = fmt::format("{}: {} (input {} '{}') depends on run-time data; popc needs static shapes (a compile-time constant)",
                                          describeOp(op), what, i, name);
  if (graph.hasTensor(name) && graph.tensor(name).kind == TensorKind::Input)
    throw Error(fmt::format("{}; it is a graph input: give its value at compile time with --freeze-input {}=FILE.npy",
                            message, name),
                name);
  // Computed on the host from one graph input (e.g. Range's limit from a
  // window size): freezing that input makes it known.
  std::set<std::string> inputs;
  int budget = 256;
  if (graph.hasTensor(name) && dataInputsOf(graph, name, inputs, budget) && inputs.size() == 1)
    throw Error(fmt::format("{}; it is computed from graph input '{}': give that value at compile time with "
                            "--freeze-input {}=FILE.npy",
                            message, *inputs.begin(), *inputs.begin()),
                *inputs.begin());
  throw Error(message);
}

std::vector<int64_t> constantInputInts(const Op &op, const Graph &graph, size_t i, const char *what) {
  inputInfo(op, graph, i);
  auto value = constantValue(graph, op.inputs[i]);
  if (!value)
    failNotConstant(op, graph, i, what);
  if (!isInteger(value->info.dtype))
    failOp(op, "{} (input {} '{}') must be an integer tensor, got {}", what, i, op.inputs[i],
           dtypeName(value->info.dtype));
  if (value->info.shape.size() > 1)
    failOp(op, "{} (input {} '{}') must be 1-D, got shape {}", what, i, op.inputs[i],
           shapeToString(value->info.shape));
  return value->toInt64s();
}

bool isFloat(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::F64; }
bool isInteger(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64 || t == DType::U8 ||
         t == DType::U16 || t == DType::U32 || t == DType::U64;
}

void requireFloat(const Op &op, const TensorInfo &info, const char *what) {
  if (!isFloat(info.dtype))
    failOp(op, "{} must be float16/float32/float64, got {}", what, dtypeName(info.dtype));
}

void requireSameDType(const Op &op, const TensorInfo &a, const TensorInfo &b, const char *whatA,
                      const char *whatB) {
  if (a.dtype != b.dtype)
    failOp(op, "{} and {} must have the same type, got {} and {}", whatA, whatB,
           dtypeName(a.dtype), dtypeName(b.dtype));
}

void requireRank(const Op &op, const TensorInfo &info, size_t rank, const char *what) {
  if (info.shape.size() != rank)
    failOp(op, "{} must be {}-D, got shape {}", what, rank, shapeToString(info.shape));
}

std::string shortDType(DType t) {
  switch (t) {
  case DType::F32: return "f32";
  case DType::F16: return "f16";
  case DType::BF16: return "bf16";
  case DType::F64: return "f64";
  case DType::I8: return "i8";
  case DType::I16: return "i16";
  case DType::I32: return "i32";
  case DType::I64: return "i64";
  case DType::U8: return "u8";
  case DType::U16: return "u16";
  case DType::U32: return "u32";
  case DType::U64: return "u64";
  case DType::Bool: return "bool";
  }
  return "?";
}

std::optional<DType> dtypeFromShort(std::string_view name) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64,
                  DType::U8, DType::U16, DType::U32, DType::U64, DType::Bool})
    if (shortDType(t) == name)
      return t;
  return std::nullopt;
}

} // namespace detail
} // namespace popc::ir
