#include "compiler/driver/compile.h"

#include "compiler/codegen/kernels.h"
#include "compiler/driver/graph_profile.h"
#include "compiler/graph/constant_spill.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/graph/serialize.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/printer.h"
#include "compiler/lib/lowering.h"
#include "compiler/lib/step.h"
#include "compiler/onnx/importer.h"
#include "compiler/onnx/trained_model.h"
#include "compiler/passes/pass_manager.h"
#include "support/allocator.h"
#include "support/error.h"
#include "support/log.h"

#include "formats/npz/npz.h"
#include "formats/popef/popef.h"

#include <fmt/ranges.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <optional>
#include <set>

namespace popc::driver {

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

graph::Target makeTarget(const CompileOptions &o) {
  graph::Target t = graph::Target::forArch(o.arch, o.numIpus);
  if (o.tilesPerIpu) {
    if (*o.tilesPerIpu == 0 || *o.tilesPerIpu > t.tilesPerIpu)
      fail("--tiles-per-ipu {}: must be between 1 and {} for {}", *o.tilesPerIpu, t.tilesPerIpu, o.arch);
    t.tilesPerIpu = *o.tilesPerIpu;
  }
  if (o.bytesPerTile) {
    if (*o.bytesPerTile < 64 || *o.bytesPerTile > 16u * 1024 * 1024)
      fail("--bytes-per-tile {}: must be between 64 and 16777216", *o.bytesPerTile);
    t.bytesPerTile = *o.bytesPerTile;
  }
  return t;
}

// One error naming every op type the device cannot run yet, with its nodes.
void checkLowerable(const ir::Graph &g, const std::string &modelPath) {
  std::map<std::string, std::vector<std::string>> missing;
  for (const auto &op : g.ops())
    if (!lib::findLowering(op->type))
      missing[op->type].push_back(op->name);
  if (missing.empty())
    return;
  std::string list;
  for (const auto &[type, nodes] : missing) {
    list += (list.empty() ? "" : "; ") + type + " (nodes: ";
    for (size_t i = 0; i < nodes.size(); ++i)
      list += (i ? ", " : "") + nodes[i];
    list += ")";
  }
  fail("{}: unsupported operators: {}", modelPath, list);
}

// The step options, checked against each other and the model with PopART's
// glossary: batch size = micro-batch size x replication x accumulation, step
// size = batch size x batches per step.
lib::StepConfig stepConfig(const CompileOptions &o, const ir::Ir &ir, const graph::Target &target,
                           const std::string &modelPath) {
  lib::StepConfig c;
  c.batchesPerStep = o.batchesPerStep;
  c.accumulationFactor = o.accumulationFactor;
  c.replicationFactor = o.replicationFactor;
  c.pipeline = o.pipeline;
  for (const std::string &spec : o.anchors) {
    auto [name, anchor] = lib::parseAnchor(spec);
    if (!c.anchors.emplace(name, anchor).second)
      fail("--anchor {}: given twice", name);
  }
  if (!o.batchesPerStep || !o.accumulationFactor || !o.replicationFactor)
    fail("--batches-per-step, --accumulation-factor and --replication-factor must be at least 1");
  if (uint64_t(o.replicationFactor) * target.numIpus > 64)
    fail("--replication-factor {} x --num-ipus {} = {} IPUs: more than the 64 IPUs of the largest system",
         o.replicationFactor, target.numIpus, uint64_t(o.replicationFactor) * target.numIpus);
  if (o.autoShard > target.numIpus)
    fail("--auto-shard {} needs {} IPUs but --num-ipus is {}", o.autoShard, o.autoShard, target.numIpus);
  if (uint64_t(o.batchesPerStep) * o.accumulationFactor > (1u << 20))
    fail("--batches-per-step {} x --accumulation-factor {}: more than 2^20 micro-batches per step",
         o.batchesPerStep, o.accumulationFactor);
  if (!o.batchSize && !o.stepSize)
    return c;
  // The micro-batch size is the leading dimension of the model's inputs.
  int64_t micro = -1;
  std::string from;
  for (const std::string &name : ir.main.inputs) {
    const Shape &s = ir.main.tensor(name).info.shape;
    if (s.empty())
      continue;
    if (micro < 0)
      micro = s[0], from = name;
    else if (s[0] != micro)
      fail("{}: --batch-size/--step-size: inputs '{}' and '{}' disagree on the micro-batch size (dimension 0: {} "
           "vs {})", modelPath, from, name, micro, s[0]);
  }
  if (micro < 0)
    fail("{}: --batch-size/--step-size: the model has no input with a batch dimension", modelPath);
  const uint64_t batch = uint64_t(micro) * o.replicationFactor * o.accumulationFactor;
  const std::string batchText = fmt::format("micro-batch size {} (input '{}' dimension 0) x replication factor {} "
                                            "x accumulation factor {} = {}",
                                            micro, from, o.replicationFactor, o.accumulationFactor, batch);
  if (o.batchSize && o.batchSize != batch)
    fail("--batch-size {} is inconsistent: batch size = {}", o.batchSize, batchText);
  if (o.stepSize && o.stepSize != batch * o.batchesPerStep)
    fail("--step-size {} is inconsistent: step size = batch size x batches per step = {} x {} = {}, where batch "
         "size = {}",
         o.stepSize, batch, o.batchesPerStep, batch * o.batchesPerStep, batchText);
  return c;
}

} // namespace

std::map<std::string, FrozenInput> loadFrozenInputs(const std::vector<std::string> &specs) {
  std::map<std::string, FrozenInput> result;
  for (const std::string &spec : specs) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      fail("--freeze-input '{}': expected NAME=FILE.npy or NAME=FILE.npz", spec);
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    npz::Array array;
    if (std::filesystem::path(path).extension() == ".npz") {
      const npz::ArrayMap arrays = npz::readNpz(path);
      if (auto it = arrays.find(name); it != arrays.end())
        array = it->second;
      else if (arrays.size() == 1)
        array = arrays.begin()->second;
      else
        fail("--freeze-input {}: {} has no member '{}' (and more than one member)", name, path, name);
    } else {
      std::ifstream in(path, std::ios::binary);
      if (!in)
        fail("--freeze-input {}: cannot open {}", name, path);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      array = npz::readNpy(bytes, path);
    }
    if (!result.emplace(name, FrozenInput{array.dtype, array.shape, std::move(array.data)}).second)
      fail("--freeze-input {}: given twice", name);
  }
  return result;
}

static_assert(popef::kDefaultCompressionLevel == 9, "CompileOptions::compression's default is popef's");

std::map<std::string, std::string> CompileOptions::describe() const {
  // Every field, by name: adding a member to CompileOptions breaks this line
  // until the new option is either described below or listed as not
  // changing the executable — so the cache key cannot silently miss it.
  const auto &[arch_, numIpus_, tilesPerIpu_, bytesPerTile_, inputShapes_, frozenInputs_, dumpIrDir_, dumpDotDir_,
               dotCheckpoints_, irDumpFile_, autoShard_, pipeline_, batchesPerStep_, accumulationFactor_, replicationFactor_, anchors_, batchSize_,
               stepSize_, sequenceLengths_, absentOptionals_, indexChecks_, halfPartials_, compression_, training_,
               spillConstantsAtBytes_] = *this;
  (void)sequenceLengths_, (void)absentOptionals_, (void)indexChecks_, (void)halfPartials_, (void)training_; // below
  (void)compression_; // below
  (void)autoShard_, (void)pipeline_, (void)batchesPerStep_, (void)accumulationFactor_, (void)replicationFactor_;
  (void)anchors_, (void)batchSize_, (void)stepSize_; // described below when not the default
  (void)dumpIrDir_, (void)dumpDotDir_, (void)dotCheckpoints_, (void)irDumpFile_; // debug output only
  (void)spillConstantsAtBytes_; // where the compiler keeps bytes meanwhile, not what it writes
  (void)arch_, (void)numIpus_, (void)tilesPerIpu_, (void)bytesPerTile_, (void)inputShapes_, (void)frozenInputs_;
  const graph::Target t = makeTarget(*this);
  std::map<std::string, std::string> d{
      {"arch", arch},
      {"num-ipus", std::to_string(numIpus)},
      {"tiles-per-ipu", std::to_string(t.tilesPerIpu)},
      {"bytes-per-tile", std::to_string(t.bytesPerTile)},
  };
  for (const auto &[name, shape] : inputShapes)
    d["input-shape:" + name] = shapeToString(shape);
  // Multi-IPU options only when set, so plain compiles keep their metadata and cache keys.
  if (!indexChecks)
    d["no-index-checks"] = "1";
  if (halfPartials)
    d["partials-type"] = "half";
  if (compression != popef::kDefaultCompressionLevel)
    d["compression"] = std::to_string(compression);
  if (autoShard)
    d["auto-shard"] = std::to_string(autoShard);
  if (pipeline)
    d["pipeline"] = "1";
  if (training) {
    const ir::TrainingConfig &t = *training;
    d["train.loss"] = t.loss;
    d["train.optimizer"] = t.optimizer;
    d["train.learning-rate"] = fmt::format("{}", t.learningRate);
    if (t.optimizer == "sgd" || t.optimizer == "momentum") {
      d["train.momentum"] = fmt::format("{}", t.momentum);
      d["train.dampening"] = fmt::format("{}", t.dampening);
      d["train.nesterov"] = t.nesterov ? "1" : "0";
    } else {
      d["train.beta1"] = fmt::format("{}", t.beta1);
      d["train.beta2"] = fmt::format("{}", t.beta2);
      d["train.epsilon"] = fmt::format("{}", t.epsilon);
    }
    d["train.weight-decay"] = fmt::format("{}", t.weightDecay);
    d["train.loss-scaling"] = fmt::format("{}", t.lossScaling);
    if (t.sumGradients)
      d["train.reduction"] = "sum";
    if (!t.trainable.empty())
      d["train.trainable"] = fmt::format("{}", fmt::join(t.trainable, ","));
  }
  if (batchesPerStep != 1)
    d["batches-per-step"] = std::to_string(batchesPerStep);
  if (accumulationFactor != 1)
    d["accumulation-factor"] = std::to_string(accumulationFactor);
  if (replicationFactor != 1)
    d["replication-factor"] = std::to_string(replicationFactor);
  for (const std::string &spec : anchors) {
    auto [name, anchor] = lib::parseAnchor(spec);
    d["anchor:" + name] = anchor.text();
  }
  for (const auto &[name, n] : sequenceLengths)
    d["sequence-input:" + name] = std::to_string(n);
  for (const auto &name : absentOptionals)
    d["optional-absent:" + name] = "1";
  // --batch-size / --step-size only check; they do not change the executable.
  for (const auto &[name, value] : frozenInputs)
    d["freeze-input:" + name] = fmt::format("{}{}:{:016x}", dtypeName(value.dtype), shapeToString(value.shape),
                                            XXH3_64bits(value.data.data(), value.data.size()));
  return d;
}

void checkTrainingOptions(const CompileOptions &o) {
  if (!o.training)
    return;
  const ir::TrainingConfig &t = *o.training;
  if (t.loss.empty())
    fail("--train needs --loss NAME (a scalar output of the model), nll:PROBS,LABEL or l1:X");
  const std::set<std::string> optimizers{"sgd", "momentum", "adam", "adamw"};
  if (!optimizers.count(t.optimizer))
    fail("--optimizer {}: expected sgd, momentum, adam or adamw", t.optimizer);
  if (!(t.learningRate > 0))
    fail("--learning-rate {}: must be positive", t.learningRate);
  if (t.momentum < 0 || t.momentum >= 1 || t.dampening < 0 || t.dampening > 1)
    fail("--momentum must be in [0, 1) and --dampening in [0, 1] (got {} and {})", t.momentum, t.dampening);
  if (t.nesterov && (t.momentum == 0 || t.dampening != 0))
    fail("--nesterov needs --momentum > 0 and --dampening 0 (as torch.optim.SGD)");
  if (t.beta1 < 0 || t.beta1 >= 1 || t.beta2 < 0 || t.beta2 >= 1 || !(t.epsilon > 0))
    fail("--beta1 and --beta2 must be in [0, 1) and --epsilon positive (got {}, {}, {})", t.beta1, t.beta2, t.epsilon);
  if (t.weightDecay < 0)
    fail("--weight-decay {}: must be >= 0", t.weightDecay);
  if (!(t.lossScaling > 0))
    fail("--loss-scaling {}: must be positive", t.lossScaling);
  if (o.pipeline && o.accumulationFactor < 2)
    fail("--train --pipeline needs --accumulation-factor of at least 2: the pipeline overlaps the micro-batches of "
         "one update (as PopART's, it is flushed before each weight update); see docs/training.md");
}

#if defined(__SANITIZE_ADDRESS__)
#define POPC_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POPC_LEAK_CHECKED 1
#endif
#endif

// Moves the compile's large structures to the heap and forgets them
// (CompileHooks::exitSoon). Sanitizer builds free them, so that their leak
// checks stay meaningful.
template <typename... T> void leaveForExit(T &&...objects) {
#ifdef POPC_LEAK_CHECKED
  ((void)objects, ...);
#else
  ((void)new std::decay_t<T>(std::move(objects)), ...);
#endif
}

std::vector<uint8_t> compileOnnx(const std::string &modelPath, const CompileOptions &options,
                                 CompileStats *stats, const CompileHooks *hooks) {
  checkTrainingOptions(options);
  ProfileFacts *profile = hooks ? hooks->profile : nullptr;
  auto phase = [&](const char *name) {
    if (hooks && hooks->phase)
      hooks->phase(name);
  };
  auto log = log::get("driver");
  CompileStats local;
  CompileStats &st = stats ? *stats : local;
  const graph::Target target = makeTarget(options);

  phase("import");
  auto t0 = Clock::now();
  onnx::ImportOptions importOptions;
  importOptions.inputShapes = options.inputShapes;
  importOptions.sequenceLengths = options.sequenceLengths;
  importOptions.absentOptionals = options.absentOptionals;
  for (const auto &[name, value] : options.frozenInputs) {
    ir::Tensor t;
    t.name = name;
    t.info = {value.dtype, value.shape};
    t.data = value.data;
    importOptions.frozenInputs.emplace(name, std::move(t));
  }
  ir::Ir ir = onnx::importOnnx(modelPath, importOptions);
  ir.training = options.training;
  ir.halfPartials = options.halfPartials;
  if (ir.training) {
    ir.training->accumulationFactor = options.accumulationFactor;
    ir.training->replicationFactor = options.replicationFactor;
  }
  st.importSeconds = secondsSince(t0);

  phase("passes");
  t0 = Clock::now();
  passes::PassOptions passOptions;
  passOptions.dumpIrDir = options.dumpIrDir;
  passOptions.dumpDotDir = options.dumpDotDir;
  passOptions.dotCheckpoints = options.dotCheckpoints;
  const char *irDump = options.irDumpFile.empty() ? nullptr : options.irDumpFile.c_str();
  auto dumpIr = [&] {
    std::ofstream out(irDump, std::ios::binary | std::ios::trunc);
    if (!(out << ir::printIr(ir)) || !out.flush())
      fail("POPC_IR_DUMP {}: cannot write the IR dump: set it to a writable file name", irDump);
  };
  try {
    passes::runPasses(ir, passOptions);
  } catch (const Error &) {
    if (irDump && *irDump)
      dumpIr();
    throw;
  }
  if (irDump && *irDump)
    dumpIr();
  st.irOps = ir.main.ops().size();
  st.passesSeconds = secondsSince(t0);
  if (profile)
    profile->ir = irJson(ir.main);
  checkLowerable(ir.main, modelPath);
  const lib::StepConfig step = stepConfig(options, ir, target, modelPath);

  phase("lowering");
  t0 = Clock::now();
  graph::DeviceGraph dg(target);
  if (ir.training)
    dg.sourceModel = onnx::modelWithoutInitializerData(modelPath, ir.training->trainable);
  codegen::VertexCodegen codegen;
  std::optional<graph::MemoryPlan> plan;
  try {
    uint32_t stages = 1;
    if (options.autoShard) {
      lib::autoShard(ir, target, options.autoShard);
      for (auto &op : ir.main.ops()) // its stages replace any __pipeline_stage
        op->pipelineStage = -1;
    }
    if (options.pipeline)
      stages = lib::assignPipelineStages(ir, target.numIpus);
    else if (target.numIpus > 1 && !options.autoShard)
      lib::placeTrainingOps(ir); // __ipu_number annotations: the optimizer's ops follow their weights
    lib::LowerOptions lowerOptions;
    lowerOptions.pipeline = options.pipeline;
    lowerOptions.trainingPipeline = options.pipeline && ir.training;
    lowerOptions.anchors = step.anchors;
    lowerOptions.iterations = step.iterations();
    lowerOptions.indexChecks = options.indexChecks;
    lowerOptions.moveConstantsFrom = &ir.main; // the IR is dropped after lowering
    const std::vector<lib::Segment> segments = lib::lowerIrSegments(ir, dg, codegen, lowerOptions);
    if (step.trivial()) {
      plan = graph::planMemory(dg);
    } else {
      lib::applyStepLayout(dg, step, stages);
      lib::StepPrograms programs = lib::buildStepPrograms(dg, segments, step, stages);
      if (options.pipeline && ir.training)
        lib::pinCrossStageTensors(dg, segments);
      dg.main() = std::move(programs.plan); // liveness of one sequential micro-batch
      plan = graph::planMemory(dg);
      dg.main() = std::move(programs.run);
    }
  } catch (const Error &e) {
    e.rethrowWithPrefix(modelPath + ": "); // name the model in lowering errors
  }
  st.lowerSeconds = secondsSince(t0);
  // The device graph holds every constant's bytes now (the large ones moved
  // from the IR): what is left of the IR is freed, and the heap's free pages
  // handed back, so the schedule's structures do not stand beside them.
  ir = ir::Ir();
  releaseFreedHeap();
  const char *tmp = std::getenv("TMPDIR"); // (std::filesystem's lookup throws on a bad TMPDIR)
  std::unique_ptr<graph::ConstantSpill> spill =
      graph::ConstantSpill::spill(dg, tmp && *tmp ? tmp : "/tmp", options.spillConstantsAtBytes);
  if (profile)
    profile->liveness = livenessJson(dg, *plan);
  for (const auto &cs : dg.computeSets())
    st.vertices += cs.vertices.size();

  phase("codegen");
  graph::ExecutableCode code;
  code.vertexTypes = codegen.vertexTypes();
  st.vertexTypes = code.vertexTypes.size();
  // Linking and optimising the vertex module is LLVM's work on one thread;
  // resolving and packing the schedule is ours: on a second core they overlap
  // (the bytes are the same either way). codegenSeconds is the module's own time.
  code.pendingBitcode = std::async(std::launch::async, [&codegen, &st] {
                          const auto start = Clock::now();
                          std::vector<uint8_t> bitcode = codegen.finish();
                          st.codegenSeconds = secondsSince(start);
                          return bitcode;
                        }).share();

  phase("write");
  t0 = Clock::now();
  graph::ExchangeStats exchange;
  std::vector<uint8_t> bytes = graph::serializeExecutable(std::move(dg), *plan, code, options.describe(), &exchange);
  // The file holds everything now. A big model's graph goes before
  // compressing needs memory (a million small frees: a fraction of a second
  // on ViT-B/16); a smaller one's constants go, and the rest waits for the exit.
  if (spill) {
    spill.reset();
    dg = graph::DeviceGraph(target);
  } else {
    for (graph::TensorId id = 0; id < dg.tensors().size(); ++id)
      std::vector<uint8_t>().swap(dg.tensor(id).constData);
  }
  releaseFreedHeap();
  if (options.compression > 0)
    bytes = popef::compress(std::move(bytes), options.compression);
  st.exchangeCopies = exchange.copies;
  st.exchangeBytes = exchange.bytes;
  st.loadCopies = exchange.loadCopies;
  st.loadBytes = exchange.loadBytes;
  st.writeSeconds = secondsSince(t0);
  log->info("compiled {}: {} IR ops, {} vertex types, {} vertices, {} copies, {} bytes", modelPath,
            st.irOps, st.vertexTypes, st.vertices, st.exchangeCopies, bytes.size());
  if (hooks && hooks->exitSoon)
    leaveForExit(std::move(dg), std::move(plan), std::move(codegen));
  return bytes;
}

} // namespace popc::driver
