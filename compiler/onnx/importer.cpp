#include "compiler/onnx/importer.h"

#include "compiler/ir/op_registry.h"
#include "compiler/onnx/onnx_internal.h"
#include "support/child_guard.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/log.h"

#include <onnx/checker.h>
#include <onnx/version_converter/convert.h>
#include <onnx/shape_inference/implementation.h>

#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

namespace popc::onnx {

using namespace detail;

namespace {
std::optional<std::string> checkerError(const ::onnx::ModelProto &model) {
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception &e) {
    return oneLine(e.what());
  }
  return std::nullopt;
}

// `before` is the checker's verdict on the model as read. The 1.12 checker
// requires graph output shapes, which many exporters leave out and inference
// fills in: a checker error only counts if it survives inference. Otherwise
// its message is clearer than inference's.
void inferShapesAndCheck(::onnx::ModelProto &model, const std::string &path,
                         const std::optional<std::string> &before) {
  try {
    // check_type + strict mode: node-level inference errors are model errors.
    ::onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/1);
    ::onnx::shape_inference::InferShapes(model, ::onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception &e) {
    if (before)
      fail("{}: invalid ONNX model: {}", path, *before);
    fail("{}: ONNX shape inference failed: {}", path, oneLine(e.what()));
  }
  if (before)
    if (auto after = checkerError(model))
      fail("{}: invalid ONNX model: {}", path, *after);
}
} // namespace

std::string detail::oneLine(const std::string &text) {
  std::string s = text;
  for (char &c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  while (!s.empty() && s.back() == ' ')
    s.pop_back();
  return s;
}

namespace {

ir::Attributes convertAttributes(const ::onnx::NodeProto &node, const std::string &context,
                                 ir::Op &op) {
  ir::Attributes attrs;
  using A = ::onnx::AttributeProto;
  for (const auto &a : node.attribute()) {
    const std::string what = fmt::format("{} attribute '{}'", context, a.name());
    switch (a.type()) {
    case A::INT: attrs.set(a.name(), int64_t(a.i())); break;
    case A::FLOAT: attrs.set(a.name(), double(a.f())); break;
    case A::STRING: attrs.set(a.name(), a.s()); break;
    case A::INTS: attrs.set(a.name(), std::vector<int64_t>(a.ints().begin(), a.ints().end())); break;
    case A::FLOATS: attrs.set(a.name(), std::vector<double>(a.floats().begin(), a.floats().end())); break;
    case A::STRINGS:
      attrs.set(a.name(), std::vector<std::string>(a.strings().begin(), a.strings().end()));
      break;
    case A::TENSOR:
      attrs.set(a.name(), std::shared_ptr<const ir::Tensor>(
                              std::make_shared<ir::Tensor>(tensorFromProto(a.t(), what))));
      break;
    default:
      fail("{}: type {} is not supported", what, A::AttributeType_Name(a.type()));
    }
  }
  // IPU annotations become Op fields, not attributes.
  for (const auto &[key, field] : {std::pair<const char *, int64_t *>{"__ipu_number", &op.ipu},
                                   {"__pipeline_stage", &op.pipelineStage}}) {
    if (!attrs.has(key))
      continue;
    *field = attrs.getInt(key);
    if (*field < 0)
      fail("{} attribute '{}' must be >= 0, got {}", context, key, *field);
    attrs.erase(key);
  }
  return attrs;
}

// Our inferred shapes must agree with ONNX's wherever ONNX knows them statically.
void crossCheckShapes(const ::onnx::GraphProto &graph, const ir::Graph &g, const std::string &path) {
  auto check = [&](const ::onnx::ValueInfoProto &vi) {
    if (!g.hasTensor(vi.name()) || !vi.type().has_tensor_type())
      return;
    const auto &tt = vi.type().tensor_type();
    const ir::TensorInfo &ours = g.tensor(vi.name()).info;
    if (tt.elem_type() != 0 &&
        dtypeFromOnnx(tt.elem_type(), fmt::format("{}: tensor '{}'", path, vi.name())) != ours.dtype)
      fail("{}: tensor '{}': popc inferred type {}, ONNX says {} (compiler bug, please report)",
           path, vi.name(), dtypeName(ours.dtype),
           dtypeName(dtypeFromOnnx(tt.elem_type(), path)));
    if (!tt.has_shape())
      return;
    bool differs = tt.shape().dim_size() != int(ours.shape.size());
    for (int i = 0; !differs && i < tt.shape().dim_size(); ++i)
      differs = tt.shape().dim(i).has_dim_value() && tt.shape().dim(i).dim_value() != ours.shape[size_t(i)];
    if (differs)
      fail("{}: tensor '{}': popc inferred shape {}, ONNX inferred {} (compiler bug, please report)",
           path, vi.name(), shapeToString(ours.shape), shapeProtoToString(tt.shape()));
  };
  for (const auto &vi : graph.value_info())
    check(vi);
  for (const auto &vi : graph.output())
    check(vi);
}

// Every real input needs a static shape (after --input-shape) before inference.
void checkStaticInputs(const ::onnx::GraphProto &graph, const std::string &path) {
  const auto real = realInputNames(graph);
  for (const auto &input : graph.input())
    if (std::find(real.begin(), real.end(), input.name()) != real.end())
      staticInputShape(input, path);
}

ir::Ir buildIr(const ::onnx::ModelProto &model, const std::vector<std::string> &names,
               int64_t opset, const std::map<std::string, ir::Tensor> &frozen, const std::string &path) {
  const auto &graph = model.graph();
  ir::Ir ir;
  ir.modelName = !graph.name().empty() ? graph.name() : std::filesystem::path(path).stem().string();
  ir.opsetVersion = opset;
  ir::Graph &g = ir.main;
  g.opset = opset;

  for (const auto &init : graph.initializer()) {
    const std::string context = fmt::format("{}: initializer '{}'", path, init.name());
    if (init.name().empty())
      fail("{}: an initializer has no name", path);
    if (g.hasTensor(init.name()))
      fail("{}: initializer '{}' is defined twice", path, init.name());
    g.addTensor(tensorFromProto(init, context));
    ir.initializers.push_back(init.name());
  }
  for (const auto &name : realInputNames(graph)) {
    const ::onnx::ValueInfoProto *vi = nullptr;
    for (const auto &in : graph.input())
      if (in.name() == name)
        vi = &in;
    ir::Tensor t;
    t.name = name;
    t.kind = ir::TensorKind::Input;
    t.info.shape = staticInputShape(*vi, path);
    t.info.dtype = dtypeFromOnnx(vi->type().tensor_type().elem_type(),
                                 fmt::format("{}: input '{}'", path, name));
    if (g.hasTensor(name))
      fail("{}: input '{}' is listed twice", path, name);
    if (auto it = frozen.find(name); it != frozen.end()) {
      const ir::Tensor &value = it->second;
      if (value.info.dtype != t.info.dtype || value.info.shape != t.info.shape)
        fail("{}: --freeze-input {}: value is {} {} but the input is {} {}", path, name,
             dtypeName(value.info.dtype), shapeToString(value.info.shape), dtypeName(t.info.dtype),
             shapeToString(t.info.shape));
      t.kind = ir::TensorKind::Constant;
      t.data = value.data;
      g.addTensor(std::move(t));
      continue;
    }
    g.addTensor(std::move(t));
    g.inputs.push_back(name);
  }
  for (int i = 0; i < graph.node_size(); ++i) {
    const auto &node = graph.node(i);
    ir::Op op;
    op.type = node.op_type();
    op.domain = node.domain() == "ai.onnx" ? "" : node.domain();
    op.name = names[size_t(i)];
    op.inputs.assign(node.input().begin(), node.input().end());
    op.outputs.assign(node.output().begin(), node.output().end());
    op.attrs = convertAttributes(node, fmt::format("{}: node '{}' ({})", path, op.name, op.type), op);
    if (op.type == "Constant") { // fold: a constant tensor, not an op
      ir::Tensor t;
      try {
        t = ir::constantOpTensor(op);
      } catch (const Error &e) {
        fail("{}: {}", path, e.what());
      }
      if (g.hasTensor(t.name))
        fail("{}: node '{}' output '{}' is already defined", path, op.name, t.name);
      g.addTensor(std::move(t));
      continue;
    }
    g.appendOp(std::move(op));
  }
  for (const auto &out : graph.output())
    g.outputs.push_back(out.name());
  try {
    ir::inferGraph(g);
  } catch (const Error &e) {
    e.rethrowWithPrefix(path + ": ");
  }
  checkDeclaredSizes(g, path);
  for (const auto &name : g.outputs)
    if (g.tensor(name).kind == ir::TensorKind::Input)
      log::get("onnx")->warn("{}: graph output '{}' is a graph input", path, name);
  return ir;
}
} // namespace

namespace {
ir::Ir importParsed(::onnx::ModelProto &model, const std::string &path, const ImportOptions &options);

// onnx::version_conversion::ConvertVersion builds a DefaultVersionConverter on
// every call, which copies every operator schema with its function bodies (the
// bulk of a small legacy model's import; a fuzzer spent 40 % of its time
// there). One converter, built on first use, serves every import in the process.
::onnx::ModelProto convertToOpset9(const ::onnx::ModelProto &typed, int64_t opset) {
  static const ::onnx::version_conversion::DefaultVersionConverter converter;
  static std::mutex mutex; // convert_version is const, but its adapters are not documented thread-safe
  std::lock_guard lock(mutex);
  return converter.convert_version(typed, ::onnx::OpSetID(opset), ::onnx::OpSetID(int64_t{9}));
}
} // namespace

ir::Ir importOnnx(const std::string &path, const ImportOptions &options) {
  // Parsing is protobuf's, hardened against crafted input: it is done once,
  // and the checking child works on its (copy-on-write) copy of the result.
  ::onnx::ModelProto model = readModel(path);
  if (options.checkInChild) {
    auto failure = runInChild(
        [&](const std::function<void(uint32_t)> &) {
          log::setLevel("off"); // the parent logs when it imports for real
          importParsed(model, path, options);
        },
        limits::kOnnxImportProbeSeconds);
    if (failure)
      fail("{}: importing the model {} in a checking child process: the model is malformed or crafted (libonnx's "
           "shape inference and checker are not hardened against that)",
           path, failure->what);
  }
  return importParsed(model, path, options);
}

namespace {
// Everything after parsing; rewrites `model` in place.
ir::Ir importParsed(::onnx::ModelProto &model, const std::string &path, const ImportOptions &options) {
  auto logger = log::get("onnx");
  checkSubgraphDepth(model, path);
  expandOptimizerOps(model, path);
  int64_t opset = aiOnnxOpset(model, path);
  if (opset > 0 && opset < 7) {
    // Legacy broadcast/consumed_inputs/is_test semantics: let ONNX's own
    // version converter rewrite the model (as the fix in the unsupported-opset
    // error would), and say so. Opset 9, not 7: exporters of that era already
    // emitted int64 Constants, which opset 9 allows. The converter needs shapes.
    try {
      ::onnx::ModelProto typed = model;
      ::onnx::shape_inference::InferShapes(typed);
      model = convertToOpset9(typed, opset);
      logger->info("{}: converted from ai.onnx opset {} to 9 with the ONNX version converter", path, opset);
      opset = 9;
    } catch (const std::exception &e) {
      logger->debug("{}: ONNX version converter failed: {}", path, oneLine(e.what()));
    }
  }
  lowerSequenceAndOptionalInputs(model, options.sequenceLengths, options.absentOptionals, path);
  // A frozen input's shape is its value's shape (it may be dynamic in the model).
  std::map<std::string, Shape> inputShapes = options.inputShapes;
  const auto &frozen = options.frozenInputs;
  const auto realInputs = realInputNames(model.graph());
  for (const auto &[name, value] : frozen) {
    if (std::find(realInputs.begin(), realInputs.end(), name) == realInputs.end())
      fail("{}: --freeze-input {}: the model has no graph input of that name", path, name);
    inputShapes.emplace(name, value.info.shape);
  }
  applyInputShapes(*model.mutable_graph(), inputShapes, path); // before anything evaluates shapes
  // Values and shapes computed at compile time from other tensors (a Loop's
  // trip count from shapes or frozen inputs, a sequence position): import the
  // nodes before the op that needs them and fold with the IR's constant evaluation.
  const StaticTensorEvaluator evaluateStatic = [&](const ::onnx::ModelProto &prefix,
                                                   const std::string &name) -> std::optional<StaticTensor> {
    try {
      const ir::Ir ir = buildIr(prefix, nodeNames(prefix.graph()), opset, options.frozenInputs, path);
      return StaticTensor{ir.main.tensor(name).info, ir::constantValue(ir.main, name)};
    } catch (const Error &) {
      return std::nullopt;
    }
  };
  // The same before sequences are resolved (If/Loop conditions and trip
  // counts may come from OptionalHasElement or SequenceLength).
  const StaticTensorEvaluator evaluateWithSequences = [&](const ::onnx::ModelProto &prefix,
                                                          const std::string &name) -> std::optional<StaticTensor> {
    try {
      ::onnx::ModelProto resolved = prefix;
      resolveStaticSequences(resolved, opset, options.frozenInputs, evaluateStatic, path);
      const ir::Ir ir = buildIr(resolved, nodeNames(resolved.graph()), opset, options.frozenInputs, path);
      return StaticTensor{ir.main.tensor(name).info, ir::constantValue(ir.main, name)};
    } catch (const Error &) {
      return std::nullopt;
    }
  };
  const ControlValueEvaluator evaluate = [&](const std::string &name,
                                            const ::onnx::GraphProto &nodes) -> std::optional<ir::Tensor> {
    ::onnx::ModelProto prefix = model;
    auto *g = prefix.mutable_graph();
    g->clear_node();
    for (const auto &n : nodes.node())
      *g->add_node() = n;
    g->clear_output();
    g->add_output()->set_name(name);
    auto t = evaluateWithSequences(prefix, name);
    return t ? t->value : std::nullopt;
  };
  expandStaticControlFlow(model, opset, options.frozenInputs, evaluate, path);
  expandFunctionOps(model, opset, path);
  resolveStaticSequences(model, opset, options.frozenInputs, evaluateStatic, path);
  const ForwardImporter importForward = [&](const ::onnx::ModelProto &forward) {
    return buildIr(forward, nodeNames(forward.graph()), opset, options.frozenInputs, path);
  };
  expandGradients(model, importForward, path);
  const auto names = nodeNames(model.graph());
  checkSupportedOps(model, names, opset, path);
  requireAiOnnxOpset(opset, path);
  loadExternalData(model, path);
  checkStaticInputs(model.graph(), path);
  // Our own inference runs before ONNX's: it validates every op (ranks,
  // attributes) with clear errors, and onnx 1.12's shape inference crashes on
  // some invalid models (e.g. a Conv whose input has rank 2).
  const auto checkerBefore = checkerError(model);
  std::optional<ir::Ir> ir;
  ir.emplace(buildIr(model, names, opset, frozen, path));
  try {
    inferShapesAndCheck(model, path, checkerBefore);
  } catch (const Error &e) {
    if (inputShapes.empty())
      throw;
    // Usually an --input-shape that changes a dimension the model fixes elsewhere.
    fail("{} (after --input-shape: the model fixes this dimension elsewhere, e.g. in an output "
         "shape or a Reshape; re-export it with that axis dynamic, e.g. torch.onnx.export(..., dynamic_axes=...))",
         e.what());
  }
  crossCheckShapes(model.graph(), ir->main, path);
  logger->debug("{}: imported {} ops, {} tensors (opset {})", path, ir->main.ops().size(),
                ir->main.tensors().size(), opset);
  return std::move(*ir);
}
} // namespace

} // namespace popc::onnx
