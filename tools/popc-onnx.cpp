// popc-onnx: compile an ONNX model into a popef executable for the simulated IPU.
#include "cache/size.h"
#include "cache/tiered_store.h"
#include "compiler/driver/compile.h"
#include "compiler/driver/graph_profile.h"
#include "compiler/onnx/importer.h"
#include "compiler/passes/pass_manager.h"
#include "formats/popef/popef.h"
#include "profile/graph_profile.h"
#include "session/compile_session.h"
#include "profile/json_writer.h"
#include "support/error.h"
#include "support/log.h"
#include "support/version.h"

#include "tools/cache_options.h"
#include "tools/cli_common.h"
#include "tools/run_guard.h"
#include "tools/progress.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <sys/resource.h>

// PopART's debug variables, read here so the compiler library reads none:
// POPC_IR_DUMP=FILE (POPART_IR_DUMP): the IR at the end of the passes, or as far
// as they got when one fails. POPC_DOT_CHECKS=FWD0:FINAL or ALL
// (POPART_DOT_CHECKS): DOT files of those checkpoints into POPC_DOT_DIR (default:
// the current directory); --dump-dot DIR already writes every checkpoint.
void applyDumpEnvironment(popc::driver::CompileOptions &options) {
  using namespace popc;
  if (const char *file = std::getenv("POPC_IR_DUMP"); file && *file)
    options.irDumpFile = file;
  const char *checks = std::getenv("POPC_DOT_CHECKS");
  if (!checks || !*checks || !options.dumpDotDir.empty())
    return;
  const char *dir = std::getenv("POPC_DOT_DIR");
  options.dumpDotDir = dir && *dir ? dir : ".";
  const std::string list = checks;
  const auto &known = passes::checkpointNames();
  for (size_t begin = 0; begin <= list.size();) {
    const size_t end = std::min(list.find(':', begin), list.size());
    const std::string name = list.substr(begin, end - begin);
    begin = end + 1;
    if (name == "ALL") {
      options.dotCheckpoints.clear();
      return;
    }
    if (std::find(known.begin(), known.end(), name) == known.end())
      fail("POPC_DOT_CHECKS '{}': unknown checkpoint '{}' (use {} or ALL, separated by ':')", list, name,
           fmt::join(known, " "));
    options.dotCheckpoints.push_back(name);
  }
}

int main(int argc, char **argv) {
  using namespace popc;
  CLI::App app{"popc-onnx: compile an ONNX model into a popef executable for the simulated IPU.\n\n"
               "Example:\n  popc-onnx model.onnx -o model.popef\n"
               "  poprun-lite model.popef --inputs inputs.npz --outputs outputs.npz\n"
               "  popc-onnx model.onnx -o model.popef --cache-dir ~/.cache/popc   # recompiles only on change",
               "popc-onnx"};
  std::string model, output, logLevel;
  driver::CompileOptions options;
  std::vector<std::string> inputShapes, frozenInputs;
  uint32_t tilesPerIpu = 0, bytesPerTile = 0;
  bool stats = false, quiet = false;
  std::string profileDir, tensorMapPath;
  popc::tools::CacheOptions cacheOptions;
  popc::tools::RunGuardOptions guard;
  app.add_option("model", model, "ONNX model to compile (.onnx)")->required();
  app.add_option("-o,--output", output, "Executable to write (default: <model>.popef beside the model)");
  app.add_option("--arch", options.arch, "Target architecture: ipu1 (GC2) or ipu2 (GC200)")
      ->check(CLI::IsMember({"ipu1", "ipu2"}))
      ->capture_default_str();
  app.add_option("--num-ipus", options.numIpus,
                 "Number of IPUs in the target; ops go to the IPU named by their __ipu_number node "
                 "attribute (default 0)")
      ->check(CLI::Range(1u, 64u))
      ->capture_default_str();
  // The bound depends on --arch, so it is checked after parsing (1..1472 for ipu2);
  // a CLI range here would show the file format's limit as if it were the arch's.
  app.add_option("--tiles-per-ipu", tilesPerIpu,
                 "Use only this many tiles per IPU, 1 to the arch's count (ipu2: 1472; default: all)")
      ->check(CLI::Validator(
          [](std::string &v) {
            const bool ok = !v.empty() && v.size() < 10 && v.find_first_not_of("0123456789") == std::string::npos &&
                            v.find_first_not_of('0') != std::string::npos;
            return ok ? std::string() : "must be a whole number from 1 to the arch's tile count";
          },
          "1..ARCH_TILES"));
  app.add_option("--bytes-per-tile", bytesPerTile, "Override the memory per tile in bytes (default: the arch's)")
      ->check(CLI::Range(64u, 16u * 1024 * 1024));
  app.add_option("--input-shape", inputShapes,
                 "Fix an input's shape, e.g. --input-shape input=1,3,224,224 (repeatable)");
  app.add_option("--freeze-input", frozenInputs,
                 "Fix a graph input's value at compile time from a .npy (or the .npz member of that name), "
                 "e.g. --freeze-input shape=shape.npy: needed when an op uses the input as a shape, axes or "
                 "count; the executable no longer takes it (repeatable)");
  std::vector<std::string> sequenceInputs, absentOptionals;
  app.add_option("--sequence-input", sequenceInputs,
                 "Fix the length of a sequence graph input, e.g. --sequence-input x=3: the executable takes its "
                 "tensors as the inputs x.0, x.1, x.2 (shapes: --input-shape x.0=...); a sequence output y is "
                 "returned as y.0, y.1, ... (repeatable)");
  app.add_option("--optional-absent", absentOptionals,
                 "Compile with this optional graph input empty (other optional inputs are present, ordinary "
                 "inputs); an empty optional output is not returned at all (repeatable)");
  // Multi-IPU (docs/multi-ipu.md).
  auto *numIpusOption = app.get_option("--num-ipus");
  app.add_option("--auto-shard", options.autoShard,
                 "Split the model into N contiguous stages of balanced cycles and memory, stage i on IPU i "
                 "(sets --num-ipus N unless given)")
      ->check(CLI::Range(1u, 64u));
  app.add_flag("--pipeline", options.pipeline,
               "Pipeline the stages (__pipeline_stage, else __ipu_number or --auto-shard): micro-batches of a step "
               "flow through the stages' IPUs at the same time. With --train, each forward stage's backward stage "
               "runs on its IPU too, over the micro-batches of one update (needs --accumulation-factor >= 2)");
  app.add_option("--batches-per-step", options.batchesPerStep,
                 "Batches run on the device per host call (a Repeat); inputs get a leading dimension of this size")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--accumulation-factor", options.accumulationFactor,
                 "Micro-batches per batch run in series (PopART data layout [batches, accumulation, replicas, ...])")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--replication-factor", options.replicationFactor,
                 "Run this many replicas of the graph over replicas x --num-ipus IPUs, each on its slice of the input")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--anchor", options.anchors,
                 "Return type of an output per step: NAME=ALL (every batch, default), NAME=EVERYN:k, NAME=FINAL or "
                 "NAME=SUM (repeatable)");
  app.add_option("--batch-size", options.batchSize,
                 "Check: micro-batch size x replication factor x accumulation factor must equal this");
  app.add_option("--step-size", options.stepSize, "Check: batch size x batches per step must equal this");
  app.add_option("--dump-ir", options.dumpIrDir, "Write the IR as text at every pass checkpoint into DIR");
  app.add_option("--dump-dot", options.dumpDotDir, "Write Graphviz DOT at every pass checkpoint into DIR");
  app.add_option("--log-level", logLevel, "trace, debug, info, warn, err or off (default: POPC_LOG_LEVEL or warn)");
  app.add_flag_callback(
      "--list-passes",
      [] {
        for (const passes::PipelineStep &step : passes::defaultPipeline())
          fmt::print("{:<24} {:<10} {}\n", step.name, step.fn ? "pass" : "checkpoint", step.purpose);
        throw CLI::Success();
      },
      "Print the IR pass pipeline in order (passes and the checkpoints --dump-ir/--dump-dot write) and exit");
  bool noIndexChecks = false;
  std::string partialsType = "float";
  app.add_option("--partials-type", partialsType,
                 "Accumulator type of float16 MatMul, Gemm and Conv (PopART's partialsTypeMatMuls and the "
                 "convolution option partialsType): 'float' (default) accumulates in float32; 'half' "
                 "accumulates in float16, rounding every partial sum, at twice the AMP rate and half the "
                 "memory (less accurate: see docs/cycle-model.md)")
      ->check(CLI::IsMember({"float", "half"}))
      ->default_str("float");
  app.add_flag("--no-index-checks", noIndexChecks,
               "Leave out Gather's run-time index check (an index outside the axis then reads zeros "
               "instead of stopping the run with the node, the index and the bound): a little faster");
  int compression = popc::popef::kDefaultCompressionLevel;
  app.add_option("--compression", compression,
                 "zstd level (1-19) of the popef's schedule (tensor mappings, vertices, exchange pieces; "
                 "weights are stored as they are, so the runner still maps them from the file); 0 stores "
                 "the schedule uncompressed (readable with flatc)")
      ->check(CLI::Range(0, 19))
      ->default_val(popc::popef::kDefaultCompressionLevel);
  // Training (docs/training.md): PopART's TrainingSession as one compiled step.
  bool train = false;
  ir::TrainingConfig training;
  const char *trainGroup = "Training (docs/training.md)";
  app.add_flag("--train", train, "Compile one training step: forward, backward and the optimizer's update")
      ->group(trainGroup);
  auto *lossOpt = app.add_option("--loss", training.loss,
                                 "The loss to minimise: a scalar output of the model, nll:PROBS,LABEL[,mean|sum] "
                                 "(PopART's NllLoss) or l1:X[,scale] (L1Loss)")
                      ->group(trainGroup);
  auto *optimizerOpt = app.add_option("--optimizer", training.optimizer, "sgd (default), momentum, adam or adamw")
                           ->check(CLI::IsMember({"sgd", "momentum", "adam", "adamw"}))
                           ->group(trainGroup);
  std::vector<CLI::Option *> trainOnly{lossOpt, optimizerOpt};
  trainOnly.push_back(app.add_option("--learning-rate", training.learningRate, "Learning rate (default 0.01)")
                          ->group(trainGroup));
  auto *momentumOpt = app.add_option("--momentum", training.momentum,
                                     "SGD momentum (default 0; 0.9 with --optimizer momentum)")
                          ->group(trainGroup);
  auto *dampeningOpt = app.add_option("--dampening", training.dampening, "SGD dampening (default 0)")->group(trainGroup);
  auto *nesterovOpt = app.add_flag("--nesterov", training.nesterov, "Nesterov momentum")->group(trainGroup);
  trainOnly.push_back(app.add_option("--weight-decay", training.weightDecay,
                                     "L2 decay added to the gradient (sgd, adam) or decoupled (adamw); default 0")
                          ->group(trainGroup));
  auto *beta1Opt = app.add_option("--beta1", training.beta1, "Adam beta1 (default 0.9)")->group(trainGroup);
  auto *beta2Opt = app.add_option("--beta2", training.beta2, "Adam beta2 (default 0.999)")->group(trainGroup);
  auto *epsilonOpt = app.add_option("--epsilon", training.epsilon, "Adam epsilon (default 1e-8)")->group(trainGroup);
  trainOnly.push_back(app.add_option("--loss-scaling", training.lossScaling,
                                     "Multiply the loss gradient by F and the weight gradients by 1/F (default 1)")
                          ->group(trainGroup));
  std::string reduction = "mean";
  trainOnly.push_back(app.add_option("--reduction", reduction,
                                     "How --accumulation-factor micro-batches' gradients combine: mean (default: "
                                     "equals one batch that many times as large) or sum")
                          ->check(CLI::IsMember({"mean", "sum"}))
                          ->group(trainGroup));
  trainOnly.push_back(app.add_option("--trainable", training.trainable,
                                     "Train only these initializers (repeatable; default: every float initializer "
                                     "the loss depends on)")
                          ->group(trainGroup));
  for (CLI::Option *o : {momentumOpt, dampeningOpt, nesterovOpt, beta1Opt, beta2Opt, epsilonOpt})
    trainOnly.push_back(o);
  app.add_flag("--stats", stats, "Print compile-time statistics");
  app.add_flag("-q,--quiet", quiet, "No phase progress on the terminal (it is never shown when stderr is not a terminal)");
  app.add_option("--profile-dir", profileDir,
                 "Write the graph profile DIR/graph.json (Poplar's graph profile, with liveness; "
                 "docs/profile-format.md). Compiles even when the cache has the executable");
  app.add_option("--save-tensor-map", tensorMapPath,
                 "Write FILE (JSON): every tensor's name -> dtype, shape, tiles and byte intervals on them");
  cacheOptions.add(app, "Content-addressed cache directory: a compile of the same model bytes, external data, "
                        "options and compiler is taken from it instead of recompiled");
  app.add_flag("--cache-copy", cacheOptions.copyHits,
               "Copy cache hits to -o instead of hard-linking them (a link is instant for any size and "
               "read-only; a copy is independent of the cache)")
      ->envname("POPC_CACHE_COPY");
  app.add_option("--cache-lock-timeout", cacheOptions.lockTimeout,
                 "Seconds to wait for another popc-onnx compiling the same model into the cache before "
                 "compiling here too (default 600)")
      ->envname("POPC_CACHE_LOCK_TIMEOUT")
      ->check(CLI::NonNegativeNumber);
  guard.addMaxMemory(app, "Refuse a model with a tensor whose declared size exceeds this");
  app.set_version_flag("--version", compilerVersion());

  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;

  return popc::tools::runTool("popc-onnx", [&]() -> int {
    popc::tools::applyLogLevel(logLevel);
    if (options.pipeline && options.batchesPerStep * options.accumulationFactor == 1)
      log::get("popc-onnx")->warn("--pipeline with one micro-batch per step changes nothing: the stages cannot "
                                  "overlap; give --batches-per-step N (or --accumulation-factor N) with N > 1");
    limits::setMemoryBudget(guard.maxMemoryBytes());
    if (tilesPerIpu)
      options.tilesPerIpu = tilesPerIpu;
    if (options.autoShard && numIpusOption->count() == 0)
      options.numIpus = options.autoShard;
    if (bytesPerTile)
      options.bytesPerTile = bytesPerTile;
    options.inputShapes = onnx::parseInputShapes(inputShapes);
    options.frozenInputs = driver::loadFrozenInputs(frozenInputs);
    options.sequenceLengths = onnx::parseSequenceLengths(sequenceInputs);
    options.absentOptionals.insert(absentOptionals.begin(), absentOptionals.end());
    options.indexChecks = !noIndexChecks;
    options.halfPartials = partialsType == "half";
    options.compression = compression;
    if (train) {
      const bool adam = training.optimizer == "adam" || training.optimizer == "adamw";
      for (CLI::Option *o : {momentumOpt, dampeningOpt, nesterovOpt})
        if (adam && o->count())
          fail("{} does not apply to --optimizer {} (it is an SGD option)", o->get_name(), training.optimizer);
      for (CLI::Option *o : {beta1Opt, beta2Opt, epsilonOpt})
        if (!adam && o->count())
          fail("{} does not apply to --optimizer {} (it is an Adam option)", o->get_name(), training.optimizer);
      if (training.optimizer == "momentum" && !momentumOpt->count())
        training.momentum = 0.9;
      if (training.optimizer == "momentum" && training.momentum == 0)
        fail("--optimizer momentum with --momentum 0 is plain sgd: give --momentum F > 0 or --optimizer sgd");
      training.sumGradients = reduction == "sum";
      options.training = training;
    } else {
      for (CLI::Option *o : trainOnly)
        if (o->count())
          fail("{} applies to training: add --train", o->get_name());
    }
    applyDumpEnvironment(options);
    if (output.empty())
      output = std::filesystem::path(model).replace_extension(".popef").string();

    // The cache lookup comes first: a hit costs a hash of the input files and
    // one copy, with no ONNX parse and no LLVM (session/compile_session.h).
    session::CacheSettings cache;
    cache.store = cacheOptions.open();
    cache.lockTimeoutSeconds = cacheOptions.lockTimeout;
    cache.compileOnHit = !options.dumpIrDir.empty() || !options.dumpDotDir.empty() || !options.irDumpFile.empty() ||
                         !profileDir.empty();
    driver::ProfileFacts facts;
    popc::tools::PhaseProgress progress("popc-onnx", quiet);
    driver::CompileHooks hooks;
    hooks.profile = profileDir.empty() ? nullptr : &facts;
    hooks.exitSoon = true; // popc-onnx ends after this compile: its graph is left for exit to reclaim
    if (progress.enabled())
      hooks.phase = [&](const char *phase) { progress.phase(phase); };
    const session::CompileResult compiled = session::compileModel(model, options, cache, output, &hooks);
    progress.done();
    if (compiled.cacheHit) {
      if (!tensorMapPath.empty())
        profile::writeJsonFile(tensorMapPath, profile::tensorMap(*popc::popef::Executable::open(output)));
      if (stats)
        fmt::print("cache hit {}: {} bytes -> {}\n", compiled.key, compiled.size, output);
      return 0;
    }
    const std::vector<uint8_t> &bytes = compiled.bytes;
    const driver::CompileStats &st = compiled.stats;
    if (!profileDir.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(profileDir, ec);
      if (ec)
        fail("--profile-dir {}: cannot create the directory: {}", profileDir, ec.message());
      profile::Json graph = profile::graphProfile(*popc::popef::Executable::fromBytes(bytes, output));
      graph["memory"]["liveness"] = facts.liveness;
      graph["ir"] = facts.ir;
      profile::writeJsonFile((std::filesystem::path(profileDir) / "graph.json").string(), graph);
    }
    if (!tensorMapPath.empty())
      profile::writeJsonFile(tensorMapPath, profile::tensorMap(*popc::popef::Executable::fromBytes(bytes, output)));
    if (stats) {
      // This process's high-water mark (the checking child's is its own): what
      // a CI runner must have free to compile the model.
      rusage usage{};
      ::getrusage(RUSAGE_SELF, &usage);
      fmt::print("import {:.3f}s  passes {:.3f}s  lower+plan {:.3f}s  codegen {:.3f}s  write {:.3f}s\n"
                 "{} IR ops, {} vertex types, {} vertices; exchange per run: {} copies, {} bytes\n"
                 "constants laid out at load: {} copies, {} bytes\n"
                 "{} bytes -> {}; peak memory {:.0f} MB\n",
                 st.importSeconds, st.passesSeconds, st.lowerSeconds, st.codegenSeconds, st.writeSeconds,
                 st.irOps, st.vertexTypes, st.vertices, st.exchangeCopies, st.exchangeBytes, st.loadCopies,
                 st.loadBytes, bytes.size(), output, double(usage.ru_maxrss) * 1024 / 1e6);
    }
    return 0;
  });
}
