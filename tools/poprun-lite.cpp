// poprun-lite: load a popef executable, JIT its vertex code and run it on the
// simulated IPU with inputs from an .npz file.
#include "cache/size.h"
#include "cache/tiered_store.h"
#include "formats/npz/compare.h"
#include "formats/npz/npz.h"
#include "formats/popef/popef.h"
#include "profile/execution_profile.h"
#include "profile/json_writer.h"
#include "profile/summary.h"
#include "session/object_cache.h"
#include "session/run_inputs.h"
#include "session/run_session.h"
#include "distributed/instance_io.h"
#include "distributed/mpi_replica_link.h"
#include "distributed/mpi_session.h"
#include "runtime/engine.h"
#include "runtime/memory_budget.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/limits.h"
#include "support/log.h"
#include "support/version.h"

#include "tools/cache_options.h"
#include "tools/cli_common.h"
#include "tools/run_guard.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <thread>

namespace {

using namespace popc;

double element(const runtime::HostTensor &t, size_t i) { return npz::elementAsDouble(t.dtype, t.data, i); }

// "out float32 [1,10]: min -1.2 max 3.4 mean 0.5 values [0.1, 0.2, ...]"
void printSummary(const std::string &name, const runtime::HostTensor &t) {
  size_t n = t.data.size() / dtypeSize(t.dtype);
  fmt::print("{} {} {}", name, dtypeName(t.dtype), shapeToString(t.shape));
  if (n == 0) {
    fmt::print(": empty\n");
    return;
  }
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (size_t i = 0; i < n; ++i) {
    double v = element(t, i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  std::string first;
  for (size_t i = 0; i < std::min<size_t>(n, 8); ++i)
    first += fmt::format("{}{:.6g}", i ? ", " : "", element(t, i));
  fmt::print(": min {:.6g} max {:.6g} mean {:.6g} values [{}{}]\n", lo, hi, sum / n, first,
             n > 8 ? ", ..." : "");
}

// An .npz file's arrays as host tensors (inputs, weights), and back.
runtime::HostTensorMap readTensors(const std::string &path, uint64_t maxMemory) {
  runtime::HostTensorMap out;
  for (auto &[name, array] : npz::readNpz(path, maxMemory ? maxMemory : UINT64_MAX))
    out[name] = {array.dtype, std::move(array.shape), std::move(array.data)};
  return out;
}
void writeTensors(const std::string &path, runtime::HostTensorMap tensors) {
  npz::ArrayMap arrays;
  for (auto &[name, t] : tensors)
    arrays[name] = {t.dtype, std::move(t.shape), std::move(t.data)};
  npz::writeNpz(path, arrays);
}

std::string percent(uint64_t part, uint64_t total) {
  return total ? fmt::format("{:5.1f}%", 100.0 * part / total) : "    -";
}

struct ReportOptions {
  size_t top = 5;         // rows of each table
  bool byHostTime = false; // order the tables by host wall time instead of simulated cycles
};

void printReport(const runtime::Report &r, double openSeconds, uint64_t iterations, const ReportOptions &options) {
  const auto &c = r.cycles;
  uint64_t total = c.total();
  double clock = r.clockHz ? static_cast<double>(r.clockHz) : 1.0;
  fmt::print("report: target {} at {:.3g} GHz, host {} with {} threads\n", r.arch, clock / 1e9,
             r.hostCpu, r.threads);
  fmt::print("  cycles total {} over {} iteration(s); per iteration {} ({:.3f} ms on the IPU)\n",
             total, iterations, total / std::max<uint64_t>(1, iterations),
             1e3 * total / std::max<uint64_t>(1, iterations) / clock);
  fmt::print("    compute  {:>14} {}\n", c.compute, percent(c.compute, total));
  fmt::print("    exchange {:>14} {}\n", c.exchange, percent(c.exchange, total));
  fmt::print("    sync     {:>14} {}\n", c.sync, percent(c.sync, total));
  fmt::print("    host     {:>14} {}\n", c.host, percent(c.host, total));
  if (r.loadExchangeBytes)
    fmt::print("  constants laid out at load: {} bytes exchanged once (not per run)\n", r.loadExchangeBytes);
  if (r.instances > 1)
    fmt::print("  MPI instances {}: this one runs replicas {}-{} of {}; host all-reduce {} bytes over the host link\n",
               r.instances, r.firstReplica, r.firstReplica + r.replicas - 1, r.totalReplicas, r.hostAllReduceBytes);
  else if (r.replicas > 1 || r.interIpuBytes)
    fmt::print("  replicas {}, inter-IPU exchange {} bytes\n", r.replicas, r.interIpuBytes);
  if (r.ipus.size() > 1)
    for (size_t i = 0; i < r.ipus.size(); ++i)
      fmt::print("    IPU {:>3}: compute {:>12} cycles, link bytes sent {:>10}, received {:>10}\n", i,
                 r.ipus[i].computeCycles, r.ipus[i].linkBytesSent, r.ipus[i].linkBytesReceived);
  fmt::print("  wall time: open+verify {:.3f} s, load {:.3f} s, JIT {:.3f} s, run {:.3f} s "
             "({:.3f} ms/iteration)\n",
             openSeconds, r.loadSeconds, r.jitSeconds, r.runSeconds,
             1e3 * r.runSeconds / std::max<uint64_t>(1, iterations));
  fmt::print("    run by phase: compute {:.3f} s, exchange {:.3f} s, host {:.3f} s\n", r.seconds.compute,
             r.seconds.exchange, r.seconds.host);
  std::vector<const runtime::ComputeSetReport *> sets;
  for (const auto &cs : r.computeSets)
    if (cs.runs)
      sets.push_back(&cs);
  auto first = [&](const auto *a, const auto *b) {
    return options.byHostTime ? a->seconds > b->seconds : a->cycles > b->cycles;
  };
  std::stable_sort(sets.begin(), sets.end(), first);
  std::vector<const runtime::ExchangeReport *> steps;
  for (const auto &ex : r.exchanges)
    if (ex.runs)
      steps.push_back(&ex);
  std::stable_sort(steps.begin(), steps.end(), first);
  const size_t top = options.top;
  const char *order = options.byHostTime ? "host time" : "cycles";
  // One name column for both tables, as wide as the longest name shown
  // (ResNet's '/layer4/layer4.0/downsample/downsample.0/Conv/in' is 48).
  size_t width = 40;
  for (size_t i = 0; i < std::min<size_t>(sets.size(), top); ++i)
    width = std::max(width, sets[i]->name.size());
  for (size_t i = 0; i < std::min<size_t>(steps.size(), top); ++i)
    width = std::max(width, steps[i]->name.size());
  if (!sets.empty() && top)
    fmt::print("  top compute sets by {}:\n", order);
  for (size_t i = 0; i < std::min<size_t>(sets.size(), top); ++i)
    fmt::print("    {:<{}} {:>12} cycles {} ({} runs, {} tiles, {} vertices, {:.3f} ms wall)\n",
               sets[i]->name, width, sets[i]->cycles, percent(sets[i]->cycles, total), sets[i]->runs,
               sets[i]->tiles, sets[i]->vertices, 1e3 * sets[i]->seconds);
  if (!steps.empty() && top)
    fmt::print("  top exchange steps by {}:\n", order);
  for (size_t i = 0; i < std::min<size_t>(steps.size(), top); ++i)
    fmt::print("    {:<{}} {:>12} cycles {} ({} runs, {} copies, {} bytes{}, {:.3f} ms wall)\n", steps[i]->name, width,
               steps[i]->cycles, percent(steps[i]->cycles, total), steps[i]->runs, steps[i]->copies,
               steps[i]->bytes, steps[i]->interIpu ? ", inter-IPU" : "", 1e3 * steps[i]->seconds);
}

// The graph profile: popc-onnx's (with liveness) when the directory has
// one, else computed from the executable.
profile::Json graphProfileFor(const popc::popef::Executable &exe, const std::string &dir) {
  const std::filesystem::path path = std::filesystem::path(dir) / "graph.json";
  if (!dir.empty() && std::filesystem::exists(path))
    return profile::readJsonFile(path.string());
  profile::Json graph = profile::graphProfile(exe);
  if (!dir.empty())
    profile::writeJsonFile(path.string(), graph);
  return graph;
}

void writeProfile(const popc::popef::Executable &exe, const std::vector<uint32_t> &trace, const std::string &dir,
                  const profile::SummaryOptions *summary, const runtime::Report &report) {
  const profile::Json graph = graphProfileFor(exe, dir);
  std::map<uint32_t, profile::HostAllReduce> hostAllReduce;
  for (uint32_t e = 0; e < report.exchanges.size(); ++e)
    if (const runtime::ExchangeReport &x = report.exchanges[e]; x.hostLink)
      hostAllReduce[e] = {x.syncCyclesPerRun, x.transferCyclesPerRun, x.bytes};
  const profile::Json execution = profile::executionProfile(graph, trace, hostAllReduce);
  if (!dir.empty())
    profile::writeJsonFile((std::filesystem::path(dir) / "execution.json").string(), execution);
  if (summary) {
    profile::SummaryOptions options = *summary;
    options.colours = tools::coloursFor(1);
    fmt::print("{}", profile::profileSummary(graph, &execution, options));
  }
}

// Under mpirun, rank 0 checks every step's inputs before any step runs, so a
// bad batch stops every rank at once with one line, not mid-way.
void checkEveryIteration(const runtime::Engine &engine, const runtime::HostTensorMap &inputs, uint64_t iterations,
                         const distributed::MpiSession &mpi) {
  const auto dataset = popc::session::datasetInputs(inputs, engine.inputs(), iterations);
  runtime::HostTensorMap run;
  for (const auto &[name, t] : inputs)
    if (!dataset.count(name))
      run[name] = t;
  const runtime::Report &r = engine.report();
  for (uint64_t k = 0; k < (dataset.empty() ? 1 : iterations); ++k) {
    try {
      if (!dataset.empty())
        popc::session::selectIteration(inputs, engine.inputs(), dataset, k, run);
      engine.checkInputs(dataset.empty() ? inputs : run);
    } catch (const Error &e) {
      fail("{}{}. Under mpirun the batch is split over {} replicas ({} per rank on {} ranks): each input holds "
           "micro-batches x replicas samples per step", e.what(), dataset.empty() ? "" : fmt::format(" (step {})", k),
           r.totalReplicas, r.replicas, mpi.size());
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"poprun-lite: run a popef executable on the simulated IPU.\n\n"
               "Example:\n  poprun-lite model.popef --inputs inputs.npz --outputs outputs.npz --report\n"
               "  poprun-lite model.popef --preload --cache-dir ~/.cache/popc   # warm the JIT cache\n"
               "  mpirun -np 2 poprun-lite train.popef --inputs data.npz --iterations 100   # 2 instances "
               "(docs/distributed.md)",
               "poprun-lite"};
  std::string model, inputsPath, outputsPath, logLevel;
  uint64_t iterations = 1;
  unsigned threads = 0;
  bool report = false, preload = false;
  std::string profileDir;
  popc::profile::SummaryOptions summaryOptions;
  bool summary = false;
  popc::tools::CacheOptions cacheOptions;
  popc::tools::RunGuardOptions guard;
  app.add_option("model", model, "Executable to run (.popef)")->required();
  app.add_option("--inputs", inputsPath, "Model inputs (.npz, one array per input name)");
  std::vector<std::string> inputArgs;
  app.add_option("--input", inputArgs,
                 "One input: NAME=FILE.npy, or a literal NAME=SHAPExTYPE=VALUES (x=1x3xf32=0.5 fills every "
                 "element, ids=4xi64=1,5,9,2 gives each); repeatable, beside or instead of --inputs")
      ->take_all()
      ->expected(1)
      ->allow_extra_args(false);
  std::string fillMode;
  uint64_t seed = 0;
  app.add_option("--fill", fillMode,
                 "Fill the inputs not given by --inputs/--input: random (floats in [-1,1), integers in [0,10), "
                 "from --seed), zeros or ones; for smoke tests and benchmarks without data")
      ->check(CLI::IsMember({"random", "zeros", "ones"}));
  app.add_option("--seed", seed, "Seed of --fill random (default 0: the same inputs on every machine)");
  std::string expectedPath;
  popc::npz::Tolerance tolerance{1e-5, 1e-6, true};
  app.add_option("--expected-outputs", expectedPath,
                 "Compare the outputs with this .npz after the run (every key, --rtol/--atol for floats, exact "
                 "for integers); exit 1 on a mismatch");
  app.add_option("--rtol", tolerance.rtol, "With --expected-outputs: relative tolerance")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--atol", tolerance.atol, "With --expected-outputs: absolute tolerance")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  uint64_t benchmark = 0;
  app.add_option("--benchmark", benchmark,
                 "Time N runs after one warm-up run and print min/median/max ms per inference "
                 "(instead of --iterations)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 30));
  app.add_option("--outputs", outputsPath, "Write the model outputs to this .npz (default: print a summary)");
  std::string loadWeightsPath, saveWeightsPath;
  app.add_option("--load-weights", loadWeightsPath,
                 "Training executables: set variables (weights, optimizer state) from this .npz before the "
                 "first run; keys are names as --save-weights writes them")
      ->check(CLI::ExistingFile);
  app.add_option("--save-weights", saveWeightsPath,
                 "Training executables: write every variable after the last run to this .npz: the trained "
                 "initializers by name, optimizer state as Accl___W (momentum), Accl1___W/Accl2___W (Adam) "
                 "and Step___ (updates so far)");
  std::string saveModelPath;
  app.add_option("--save-model", saveModelPath,
                 "Training executables: write the original ONNX model with the trained initializers after the "
                 "last run (PopART's modelToHost)");
  app.add_option("--iterations", iterations,
                 "Run the program this many times (default 1). An input whose leading dimension is K times "
                 "the model's gives run k its k-th slice (a dataset of K steps)")
      ->check(CLI::Range(uint64_t(1), uint64_t(1) << 40));
  app.add_option("--threads", threads,
                 "Host threads (default: all cores; under mpirun, the cores divided by the ranks on this machine)")->check(CLI::Range(1u, 1024u));
  app.add_flag("--report", report, "Print simulated cycles by phase and host wall times");
  bool noIndexChecks = false;
  app.add_flag("--no-index-checks", noIndexChecks,
               "Do not stop the run when a Gather index is out of range (the executable's run-time checks; "
               "such an index reads zeros). popc-onnx --no-index-checks also leaves the check out of the code");
  ReportOptions reportOptions;
  std::string reportSort = "cycles";
  app.add_option("--report-top", reportOptions.top,
                 "With --report: rows in the top compute sets and exchange steps tables")
      ->default_val(5)
      ->check(CLI::Range(0, 1000000));
  app.add_option("--report-sort", reportSort,
                 "With --report: order those tables by simulated 'cycles' or by 'host' wall time "
                 "(where the simulation itself spends its time)")
      ->default_val("cycles")
      ->check(CLI::IsMember({"cycles", "host"}));
  app.add_option("--profile-dir", profileDir,
                 "Write the execution profile DIR/execution.json (Poplar's execution profile: program trace "
                 "and simulated steps; docs/profile-format.md), and DIR/graph.json unless popc-onnx wrote it");
  app.add_flag("--summary", summary, "Print the profile summary (Poplar's printProfileSummary layout)");
  app.add_flag("--show-execution-steps", summaryOptions.showExecutionSteps,
               "With --summary: list every simulated step");
  app.add_flag("--show-var-storage", summaryOptions.showVarStorage,
               "With --summary: liveness per program (needs graph.json from popc-onnx --profile-dir)");
  app.add_flag("--preload", preload,
               "Load and JIT the executable before reading inputs (like POPART_PRELOAD_POPEF). Without "
               "--inputs it only warms the JIT object cache (--cache-dir) and exits 0")
      ->envname("POPC_PRELOAD_POPEF");
  cacheOptions.add(app, "Cache JIT-compiled machine code here (shared with popc-onnx --cache-dir)");
  app.add_option("--log-level", logLevel, "trace, debug, info, warn, err or off (default: POPC_LOG_LEVEL or warn)");
  guard.add(app);
  app.set_version_flag("--version", compilerVersion());

  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;

  return popc::tools::runTool("poprun-lite", [&]() -> int {
    popc::tools::applyLogLevel(logLevel);
    // Options that would change nothing say so rather than being ignored.
    for (const auto &[given, name] : {std::pair{summaryOptions.showVarStorage, "--show-var-storage"},
                                      std::pair{summaryOptions.showExecutionSteps, "--show-execution-steps"}})
      if (given && !summary)
        log::get("poprun-lite")->warn("{} does nothing without --summary; add --summary to print it", name);
    if (app.get_option("--report-top")->count() + app.get_option("--report-sort")->count() && !report)
      log::get("poprun-lite")->warn("--report-top and --report-sort do nothing without --report");
    const uint64_t maxMemory = guard.maxMemoryBytes();
    limits::setMemoryBudget(maxMemory);
    popc::tools::Watchdog watchdog("poprun-lite", guard.timeoutSeconds);
    // Under mpirun with 2+ ranks this process is one instance (docs/distributed.md):
    // it runs its share of the replicas; rank 0 reads inputs and writes every output.
    const auto mpi = distributed::MpiSession::join("poprun-lite", watchdog.flag());
    const bool rank0 = !mpi || mpi->rank() == 0;
    // Collective under MPI: a problem on any rank stops every rank with its message.
    auto agree = [&](const std::function<void()> &step) {
      if (!mpi)
        return step();
      std::optional<std::string> problem;
      try {
        step();
      } catch (const Error &e) {
        problem = e.what();
      }
      try {
        mpi->agree(problem);
      } catch (const Error &e) {
        mpi->reportAgreedError(e.what());
        throw popc::tools::ErrorAlreadyReported{};
      }
    };
    if (mpi && benchmark)
      fail("--benchmark times one process; under mpirun use --iterations and --report");

    // Ranks on one machine share its cores: by default each takes its share.
    if (mpi && threads == 0)
      threads = std::max(1u, runtime::defaultThreadCount() / unsigned(mpi->ranksOnThisHost()));
    session::useObjectCache(cacheOptions.open()); // before the open: it keeps decompressed schedules too
    auto t0 = std::chrono::steady_clock::now();
    // Collective: every rank reads the same file, and one rank's error must
    // not become mpirun's kill of the others before they say it too.
    std::shared_ptr<const popc::popef::Executable> executable;
    agree([&] {
      executable = popc::popef::Executable::open(model, threads ? threads : runtime::defaultThreadCount(), maxMemory);
    });
    double openSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    agree([&] { runtime::checkMemoryBudget(*executable, maxMemory); });

    // Profiling records the program trace; without it the engine has no observer.
    std::unique_ptr<profile::TraceRecorder> trace;
    if (summary || !profileDir.empty())
      trace = std::make_unique<profile::TraceRecorder>(*executable);
    if (!profileDir.empty()) { // fail before running, not after
      std::error_code ec;
      std::filesystem::create_directories(profileDir, ec);
      if (ec)
        fail("--profile-dir {}: cannot create the directory: {}", profileDir, ec.message());
    }
    runtime::EngineOptions engineOptions{threads, nullptr};
    if (mpi) // collective: every rank finds the same mismatch, and says it
      agree([&] {
        engineOptions.replicaLink =
            distributed::makeMpiReplicaLink(*mpi, executable->root().target()->replication_factor(), model);
      });
    engineOptions.observer = trace.get();
    engineOptions.stop = watchdog.flag();
    engineOptions.runChecks = !noIndexChecks;

    // --preload: load and JIT before the inputs are read, so a later run (or
    // this one's inputs) finds the machine code ready.
    std::unique_ptr<session::RunSession> runSession;
    runtime::Engine *engine = nullptr;
    auto startEngine = [&] {
      runSession = std::make_unique<session::RunSession>(executable, engineOptions, model);
      engine = &runSession->engine();
    };
    if (preload) {
      startEngine();
      log::get("poprun-lite")->info("preloaded {}: JIT {:.3f} s", model, engine->report().jitSeconds);
      if (inputsPath.empty()) {
        fmt::print("preloaded {} (JIT {:.3f} s); no --inputs, nothing to run\n", model,
                   engine->report().jitSeconds);
        return 0;
      }
    }

    if (!engine)
      agree(startEngine);

    // Rank 0 alone reads the inputs and the weights; every rank hears of a problem.
    runtime::HostTensorMap inputs;
    agree([&] {
      if (!rank0)
        return;
      if (!inputsPath.empty())
        inputs = readTensors(inputsPath, maxMemory);
      for (const std::string &arg : inputArgs) {
        auto [name, tensor] = popc::session::parseInputArgument(arg, maxMemory);
        if (inputs.count(name))
          fail("--input {}: input '{}' is given twice (by --inputs or another --input)", arg, name);
        inputs[name] = std::move(tensor);
      }
      popc::session::fillMissingInputs(inputs, engine->inputs(), popc::session::parseFillMode(fillMode), seed);
      if (inputs.empty() && !engine->inputs().empty())
        fail("{}: the model needs inputs ({}): pass --inputs FILE.npz, --input NAME=..., or --fill random|zeros|ones",
             model, engine->describeInputs());
      if (mpi) // every step's inputs, before any step runs
        checkEveryIteration(*engine, inputs, iterations, *mpi);
      if (!loadWeightsPath.empty()) {
        const std::string what = "--load-weights " + loadWeightsPath;
        runSession->requireVariables(what); // before reading the file
        runSession->setWeights(readTensors(loadWeightsPath, maxMemory), what);
      }
    });
    if (mpi)
      distributed::broadcastVariables(*mpi, *engine);
    session::RunSession::RunFn runOnce;
    if (mpi)
      runOnce = [&](const runtime::HostTensorMap &in) { return distributed::runOnInstances(*mpi, *engine, in); };
    for (const auto &[path, flag] : {std::pair{saveWeightsPath, "--save-weights"}, std::pair{saveModelPath, "--save-model"}})
      if (!path.empty())
        runSession->requireVariables(fmt::format("{} {}", flag, path));

    runtime::HostTensorMap outputs;
    uint64_t done = 0;
    std::vector<double> runMs; // --benchmark: each timed run
    try {
      if (benchmark) {
        outputs = engine->run(inputs); // warm-up: first-touch and caches, not timed
        for (uint64_t i = 0; i < benchmark; ++i) {
          const auto start = std::chrono::steady_clock::now();
          outputs = engine->run(inputs);
          runMs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        done = iterations = benchmark + 1;
      } else {
        outputs = runSession->runSteps(inputs, iterations, runOnce, &done);
      }
    } catch (const runtime::Stopped &) {
      if (mpi)
        mpi->abort(fmt::format("{}: stopped by --timeout {} s after {} complete iteration(s), waiting for the other "
                               "ranks or the current step (a rank may be hung or dead); stopping every rank, no "
                               "outputs written",
                               model, guard.timeoutSeconds, done),
                   limits::kExitTimeout);
      fmt::print(stderr, "poprun-lite: error: {}: stopped by --timeout {} s after {} complete iteration(s); "
                         "no outputs written\n", model, guard.timeoutSeconds, done);
      return limits::kExitTimeout;
    }
    watchdog.finished();
    if (!rank0)
      return 0; // rank 0 writes every output, the weights and the report

    if (!saveWeightsPath.empty() || !saveModelPath.empty()) {
      const runtime::HostTensorMap weights = runSession->weights();
      if (!saveWeightsPath.empty())
        writeTensors(saveWeightsPath, weights);
      if (!saveModelPath.empty())
        runSession->writeModel(saveModelPath, weights);
    }
    if (!outputsPath.empty()) {
      // (a copy when --expected-outputs still compares them)
      writeTensors(outputsPath, expectedPath.empty() ? std::move(outputs) : outputs);
    } else {
      for (const auto &io : engine->outputs()) // in model order
        printSummary(io.name, outputs.at(io.name));
    }
    if (benchmark) {
      std::sort(runMs.begin(), runMs.end());
      const size_t n = runMs.size();
      const double median = n % 2 ? runMs[n / 2] : (runMs[n / 2 - 1] + runMs[n / 2]) / 2;
      fmt::print("benchmark: {} runs after 1 warm-up, ms per inference: min {:.3f} median {:.3f} max {:.3f} "
                 "({} host threads)\n",
                 n, runMs.front(), median, runMs.back(), engine->report().threads);
    }
    bool matched = true;
    if (!expectedPath.empty()) {
      const auto expected = npz::readNpz(expectedPath, maxMemory ? maxMemory : UINT64_MAX);
      std::map<std::string, npz::ArrayView> got, want;
      for (const auto &[name, t] : outputs)
        got[name] = {t.dtype, &t.shape, t.data};
      for (const auto &[name, a] : expected)
        want[name] = npz::view(a);
      const auto result = npz::compareMaps(got, want, tolerance, "outputs");
      for (const std::string &line : result.lines)
        fmt::print("{}\n", line);
      matched = result.ok;
      if (!matched)
        fmt::print(stderr, "poprun-lite: error: {}: outputs differ from {}\n", model, expectedPath);
    }
    if (report) {
      reportOptions.byHostTime = reportSort == "host";
      printReport(engine->report(), openSeconds, iterations, reportOptions);
    }
    if (trace)
      writeProfile(*executable, trace->trace(), profileDir, summary ? &summaryOptions : nullptr, engine->report());
    return matched ? 0 : 1;
  });
}
