#include "runtime/engine.h"

#include "runtime/bitcode_gate.h"
#include "runtime/bitcode_probe.h"
#include "runtime/code_pages.h"
#include "runtime/cycle_model.h"
#include "runtime/device_memory.h"
#include "runtime/jit.h"
#include "runtime/memory_sandbox.h"
#include "runtime/object_cache.h"
#include "runtime/step_tables.h"
#include "runtime/tensor_text.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/log.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <functional>
#include <map>
#include <chrono>
#include <cstring>
#include <numeric>
#include <optional>

namespace popc::runtime {

namespace fb = ::popef::fb;
using popef::len;

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string ioList(const std::vector<IoDesc> &list) {
  std::string s;
  for (const auto &io : list)
    s += fmt::format("{}{} {} {}", s.empty() ? "" : ", ", io.name, dtypeName(io.dtype),
                     shapeToString(io.shape));
  return s.empty() ? "(none)" : s;
}

} // namespace

struct Engine::Impl {
  std::shared_ptr<const popef::Executable> exe;
  const fb::Executable &root;
  const fb::Target &target;
  std::string label;
  std::shared_ptr<IpuLink> link;
  std::shared_ptr<ReplicaLink> replicaLink; // null: every replica is here
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Jit> jit;
  std::unique_ptr<DeviceMemory> memory;
  std::vector<VertexFn> typeFns;
  std::vector<ComputeSetPlan> computeSets;
  std::vector<ExchangePlan> exchanges;
  std::vector<bool> runInMain; // per exchange step: main or a function runs it (not only the load program)
  std::vector<bool> loadOnly;  // per exchange step: only the load program runs it (planned as it runs)
  std::vector<std::vector<const fb::Check *>> checksAfter; // by compute set
  bool runChecks = true;
  std::vector<IoDesc> inputs, outputs, variables;
  std::vector<uint32_t> variableTensors; // per variables[i]: its tensor
  // Host buffers of the current run, by stream index.
  std::vector<const uint8_t *> streamSource;
  std::vector<uint8_t *> streamSink;
  std::vector<bool> streamed;
  // Step layout (docs/multi-ipu.md): replicas of the graph side by side in
  // the arena, and host buffers used as FIFOs of per-execution chunks.
  uint32_t replicas = 1;       // in this engine
  uint32_t totalReplicas = 1;  // the executable's replication factor
  uint32_t firstReplica = 0;   // global index of local replica 0
  uint32_t tilesPerReplica = 0;
  std::vector<uint64_t> streamHostBytes;     // whole host buffer of this run, by stream
  std::vector<uint64_t> streamCalls, streamMoves;
  std::vector<bool> flexibleInput;           // step inputs: any shape with the right element count
  uint8_t sinkForEmpty[1] = {};
  Report report;
  const std::atomic<bool> *stop = nullptr;
  bool jitted = false;
  ProgramObserver *observer = nullptr;
  // Graph API: per-stream host callbacks and the PrintTensor sink.
  std::vector<Engine::StreamCallback> streamCallbacks;
  std::function<void(const std::string &)> printHandler;
  std::vector<CodeModuleRef> modules;
  std::vector<std::vector<uint8_t>> checkedBitcode; // re-emitted by the checking child (bitcode_probe.h)
  // Per code module: its whole-module object cache key (jit.h) and, on a hit, its machine code.
  std::vector<std::string> moduleKeys;
  std::vector<std::optional<std::vector<std::vector<uint8_t>>>> cachedObjects;

  // The tiles' pages are freed on every host thread before the arena is
  // unmapped, where the kernel would free them one after the other (a warm
  // GoogLeNet start 0.253 -> 0.243 s).
  ~Impl() {
    if (memory && pool) {
      const size_t parts = pool->size() * 4;
      pool->parallelFor(parts, [&](size_t i) { memory->release(i, parts); });
    }
  }

  Impl(std::shared_ptr<const popef::Executable> e, EngineOptions options)
      : exe(std::move(e)), root(exe->root()), target(*root.target()), label(exe->label()),
        link(options.ipuLink ? options.ipuLink : makeInProcessIpuLink()), replicaLink(options.replicaLink),
        observer(options.observer) {
    collectCodeModules();
    const auto jitStart = Clock::now(); // the cache lookup and the probe count as JIT time
    if (!options.skipJit)
      findCachedModules(options.threads ? options.threads : defaultThreadCount());
    const bool allCached = std::all_of(cachedObjects.begin(), cachedObjects.end(), [](const auto &o) { return o; });
    // Fork before any thread of ours exists: a thread holding an allocator lock at
    // fork time (ASan's is not fork-safe) would deadlock the child. Modules whose
    // machine code is cached are not read at all, so need no probe.
    if (!options.skipJit && options.probeCodeInChild && !allCached) {
      checkedBitcode = checkCodeModulesInChild(modules, label);
      for (size_t m = 0; m < modules.size(); ++m)
        modules[m].bitcode = checkedBitcode[m]; // the untrusted bytes never reach this process's reader
    }
    pool = std::make_unique<ThreadPool>(options.threads);
    report.arch = target.arch() ? target.arch()->str() : "";
    report.clockHz = target.clock_hz();
    report.threads = pool->size();

    stop = options.stop;
    runChecks = options.runChecks;
    if (options.skipJit) {
      typeFns.assign(len(root.vertex_types()), nullptr);
    } else {
      compile();
      jitted = true;
      report.hostCpu = jit->hostCpu();
      releaseLlvmCodePages(); // before the tiles' memory comes in (peak RSS)
    }
    report.jitSeconds = secondsSince(jitStart);

    auto t0 = Clock::now();
    replicas = totalReplicas = std::max(1u, target.replication_factor());
    if (replicaLink) {
      firstReplica = replicaLink->firstReplica();
      replicas = replicaLink->localReplicas();
      if (replicas == 0 || firstReplica + uint64_t(replicas) > totalReplicas)
        fail("{}: replicas {} to {} do not exist: the executable has {} (popc-onnx --replication-factor)", label,
             firstReplica, firstReplica + uint64_t(replicas) - 1, totalReplicas);
      report.instances = replicaLink->instances();
    }
    tilesPerReplica = target.num_ipus() * target.tiles_per_ipu();
    report.replicas = replicas;
    report.firstReplica = firstReplica;
    report.totalReplicas = totalReplicas;
    report.ipus.resize(target.num_ipus());
    auto phase = [&, t = Clock::now()](const char *what) mutable {
      log::get("runtime")->debug("{}: load: {} {:.3f} s", label, what, secondsSince(t));
      t = Clock::now();
    };
    // The verified file's pages leave this process's resident memory before
    // the tiles' come in; the constants bring back just their own.
    exe->releaseMappedPages();
    // Each tile gets the host memory it may use (the verifier bounds every
    // access by it), mapped on every host thread.
    memory = std::make_unique<DeviceMemory>(popef::replicaTileMemoryBytes(root, replicas), pool.get());
    phase("tile memory");
    loadConstants();
    phase("constants");
    planComputeSets();
    exe->releaseMappedPages(); // the runs read the vertices' field offsets back, nothing else of it
    phase("compute set tables");
    planExchanges();
    phase("exchange tables");
    runLoadProgram();
    // The tables hold what the runs need of the file but the vertices' field
    // offsets (and the program), which the first run maps back in.
    exe->releaseMappedPages();
    phase("load program");
    describeIo();
    report.loadSeconds = secondsSince(t0);
  }

  // Each code module's bitcode and the entry symbols its vertex types name.
  void collectCodeModules() {
    const uint32_t nTypes = len(root.vertex_types());
    modules.resize(len(root.code()));
    for (uint32_t m = 0; m < modules.size(); ++m) {
      modules[m].bitcode = {root.code()->Get(m)->bitcode()->data(), root.code()->Get(m)->bitcode()->size()};
      for (uint32_t t = 0; t < nTypes; ++t)
        if (root.vertex_types()->Get(t)->module_() == m)
          modules[m].entrySymbols.push_back(root.vertex_types()->Get(t)->symbol()->str());
    }
  }

  // The sandbox of code module m: types sharing a symbol get the smallest
  // field table (the strictest).
  MemorySandbox sandboxFor(uint32_t m) const {
    MemorySandbox sandbox = DeviceMemory::sandbox();
    for (uint32_t t = 0; t < len(root.vertex_types()); ++t) {
      const fb::VertexType *vt = root.vertex_types()->Get(t);
      if (vt->module_() != m)
        continue;
      unsigned fields = len(vt->fields());
      auto [it, added] = sandbox.entryFieldCounts.emplace(vt->symbol()->str(), fields);
      if (!added)
        it->second = std::min(it->second, fields);
    }
    return sandbox;
  }

  // Each module's key and, when the object cache has the whole module, its
  // machine code (before the probe: the executable's own bytes are keyed).
  void findCachedModules(unsigned threads) {
    moduleKeys.resize(modules.size());
    cachedObjects.resize(modules.size());
    if (!objectCache())
      return;
    for (uint32_t m = 0; m < modules.size(); ++m) {
      moduleKeys[m] = moduleCacheKey(modules[m].bitcode, sandboxFor(m), threads);
      cachedObjects[m] = cachedModuleObjects(moduleKeys[m]);
    }
  }

  void compile() {
    uint32_t nTypes = len(root.vertex_types());
    jit = std::make_unique<Jit>(pool.get());
    for (uint32_t m = 0; m < modules.size(); ++m) {
      std::string where = fmt::format("{}: code module {}", label, m);
      if (cachedObjects[m]) {
        jit->addObjects(std::move(*cachedObjects[m]), where);
        cachedObjects[m].reset();
        continue;
      }
      const MemorySandbox sandbox = sandboxFor(m);
      auto context = std::make_unique<llvm::LLVMContext>();
      auto module = loadCodeModule(*context, modules[m].bitcode, where, modules[m].entrySymbols);
      jit->addModule(std::move(module), std::move(context), where, &sandbox, moduleKeys[m]);
    }
    typeFns.resize(nTypes);
    for (uint32_t t = 0; t < nTypes; ++t) {
      const fb::VertexType *vt = root.vertex_types()->Get(t);
      typeFns[t] = jit->lookup(vt->symbol()->str(), fmt::format("{}: code module {}", label, vt->module_()));
    }
  }

  // A tensor without bytes has no mapping vector at all (flatbuffers omits empty ones).
  // Replica r's copy of a tile.
  uint32_t tileOf(uint32_t tile, uint32_t r) const { return replicaTiles().tileOf(tile, r); }
  // Only the intervals on (replica r's) tiles [firstTile, endTile) when given.
  void scatter(const fb::Tensor &t, const uint8_t *host, uint32_t r = 0, uint64_t firstTile = 0,
               uint64_t endTile = UINT64_MAX) {
    popef::forEachInterval(t, [&](const fb::TileInterval &iv) {
      const uint32_t tile = tileOf(iv.tile(), r);
      if (tile >= firstTile && tile < endTile)
        std::memcpy(memory->tile(tile) + iv.offset(), host + iv.begin(), iv.bytes());
    });
  }
  void gather(const fb::Tensor &t, uint8_t *host, uint32_t r = 0) {
    popef::forEachInterval(t, [&](const fb::TileInterval &iv) {
      std::memcpy(host + iv.begin(), memory->tile(tileOf(iv.tile(), r)) + iv.offset(), iv.bytes());
    });
  }

  // On every host thread, each writing the tiles of its own range, in
  // tensor order: the bytes are the sequential loop's even where a (hostile)
  // file maps two constants to the same tile memory.
  void loadConstants() {
    std::vector<std::pair<const fb::Tensor *, std::span<const uint8_t>>> constants; // tensor, its bytes
    for (uint32_t i = 0; i < len(root.tensors()); ++i)
      if (const fb::Tensor *t = root.tensors()->Get(i); t->constant() >= 0 && t->mapping())
        constants.emplace_back(t, exe->constant(uint32_t(t->constant())));
    const uint64_t tiles = uint64_t(tilesPerReplica) * replicas, parts = std::min<uint64_t>(tiles, pool->size());
    // In batches of about kConstantBatchBytes, each batch's file pages
    // released once it is scattered: the file's constants are not resident
    // all at once beside the tiles' memory (the process's peak RSS).
    for (size_t begin = 0; begin < constants.size();) {
      size_t end = begin;
      uint64_t bytes = 0;
      const uint8_t *lo = nullptr, *hi = nullptr;
      while (end < constants.size() && (end == begin || bytes < kConstantBatchBytes)) {
        const std::span<const uint8_t> data = constants[end++].second;
        bytes += data.size();
        lo = lo ? std::min(lo, data.data()) : data.data();
        hi = std::max(hi, data.data() + data.size());
      }
      pool->parallelFor(parts, [&](size_t part) {
        const uint64_t first = tiles * part / parts, last = tiles * (part + 1) / parts;
        for (uint32_t r = 0; r < replicas; ++r)
          for (size_t c = begin; c < end; ++c)
            scatter(*constants[c].first, constants[c].second.data(), r, first, last);
      });
      if (lo)
        exe->releaseMappedPages({lo, size_t(hi - lo)});
      begin = end;
    }
  }
  static constexpr uint64_t kConstantBatchBytes = 4 << 20;

  // The step tables are independent of each other: built on every host
  // thread at once (each index writes only its own plan and report entry).
  void planComputeSets() {
    uint32_t n = len(root.compute_sets());
    computeSets.resize(n);
    report.computeSets.resize(n);
    checksAfter.assign(n, {});
    if (runChecks)
      for (uint32_t i = 0; i < len(root.checks()); ++i)
        checksAfter[root.checks()->Get(i)->compute_set()].push_back(root.checks()->Get(i));
    pool->parallelFor(n, [this](size_t c) { planComputeSet(uint32_t(c)); });
  }

  void planComputeSet(uint32_t c) {
    const fb::ComputeSet *cs = root.compute_sets()->Get(c);
    ComputeSetPlan &plan = computeSets[c];
    plan = runtime::planComputeSet(root, c, replicaTiles(), typeFns, pool->size());
    ComputeSetReport &rep = report.computeSets[c];
    rep.name = cs->name() ? cs->name()->str() : fmt::format("cs{}", c);
    rep.vertices = uint32_t(popef::vertexCount(*cs));
    rep.tiles = plan.tilesPerReplica;
    rep.cyclesPerRun = plan.cycles;
  }

  ReplicaTiles replicaTiles() const { return {*memory, replicas, tilesPerReplica}; }

  void planExchanges() {
    uint32_t n = len(root.exchanges());
    exchanges.resize(n);
    report.exchanges.resize(n);
    // Steps only the load program runs are charged no cycles: their traffic
    // table (a sort of every source run) is left out.
    runInMain.assign(n, false);
    markExchanges(root.main());
    for (uint32_t f = 0; f < len(root.functions()); ++f)
      markExchanges(root.functions()->Get(f));
    // The load program's own steps are planned as it runs them, one at a
    // time, and dropped after (runLoadProgram): their tables are not held
    // beside the runs' (peak RSS).
    markLoadOnlySteps();
    std::vector<uint32_t> planned;
    for (uint32_t e = 0; e < n; ++e)
      if (!loadOnly[e])
        planned.push_back(e);
    pool->parallelFor(planned.size(), [&](size_t i) { planExchange(planned[i]); });
  }

  // Exchange steps that only the load program runs (after markExchanges).
  void markLoadOnlySteps() {
    loadOnly.assign(runInMain.size(), false);
    if (const fb::Program *load = root.load(); load && load->children())
      for (const fb::Program *step : *load->children())
        if (!runInMain[step->index()])
          loadOnly[step->index()] = true;
  }

  void markExchanges(const fb::Program *p) {
    if (!p)
      return;
    if (p->kind() == fb::ProgramKind::Exchange && p->index() < runInMain.size())
      runInMain[p->index()] = true;
    for (uint32_t i = 0; i < len(p->children()); ++i)
      markExchanges(p->children()->Get(i));
  }

  void planExchange(uint32_t e) {
    const fb::ExchangeStep *step = root.exchanges()->Get(e);
    exchanges[e] = runtime::planExchange(root, e, replicaTiles(), runInMain[e], replicaLink != nullptr, pool->size());
    describeExchange(e, *step, exchanges[e].broadcastFrom >= 0);
    // The plan holds the step now: the file's pages go, so the schedule is
    // not resident beside the tiles' memory (peak RSS). All of them, not just
    // the step's records: reading those faulted their neighbours in too
    // (ResNet-50: 20 MB of them after the last step). Pages another thread
    // still reads come back from the page cache.
    exe->releaseMappedPages();
  }

  void describeExchange(uint32_t e, const fb::ExchangeStep &step, bool hostLink) {
    const ExchangePlan &plan = exchanges[e];
    ExchangeReport &rep = report.exchanges[e];
    rep.name = step.name() ? step.name()->str() : fmt::format("exchange{}", e);
    rep.copies = uint32_t(popef::stepRecordCount(step));
    rep.bytes = plan.cost.bytes;
    rep.interIpu = plan.cost.interIpu;
    rep.hostLink = hostLink;
    rep.syncCyclesPerRun = plan.cost.sync;
    rep.transferCyclesPerRun = plan.cost.transfer;
  }

  void performBroadcast(ExchangePlan &plan) {
    const uint32_t from = uint32_t(plan.broadcastFrom);
    uint8_t *buffer = plan.broadcastBuffer.data();
    if (from >= firstReplica && from < firstReplica + replicas) {
      uint64_t at = 0;
      for (const RemoteCopy &c : plan.broadcastCopies) {
        std::memcpy(buffer + at, memory->tile(tileOf(c.srcTile, from - firstReplica)) + c.srcOffset, c.bytes);
        at += c.bytes;
      }
    }
    replicaLink->broadcastFromReplica(from, plan.broadcastBuffer);
    for (uint32_t r = 0; r < replicas; ++r) {
      uint64_t at = 0;
      for (const RemoteCopy &c : plan.broadcastCopies) {
        std::memcpy(memory->tile(tileOf(c.dstTile, r)) + c.dstOffset, buffer + at, c.bytes);
        at += c.bytes;
      }
    }
    report.hostAllReduceBytes += plan.broadcastBuffer.size();
  }

  void describeIo() {
    uint32_t nStreams = len(root.streams());
    streamSource.assign(nStreams, nullptr);
    streamSink.assign(nStreams, nullptr);
    streamed.assign(nStreams, false);
    streamHostBytes.assign(nStreams, 0);
    streamCalls.assign(nStreams, 0);
    streamMoves.assign(nStreams, 0);
    const fb::Metadata *m = root.metadata();
    if (!m)
      return;
    auto add = [&](const auto *list, std::vector<IoDesc> &out) {
      for (uint32_t i = 0; i < len(list); ++i) {
        const fb::IoInfo *io = list->Get(i);
        const fb::Tensor *t = root.tensors()->Get(io->tensor());
        IoDesc d{io->name()->str(), static_cast<DType>(t->dtype()), popef::tensorShape(*t), popef::tensorBytes(*t),
                 popef::tensorBytes(*t)};
        if (len(io->host_shape())) { // the whole step's host array (docs/multi-ipu.md)
          d.shape.assign(io->host_shape()->begin(), io->host_shape()->end());
          uint64_t elems = 1;
          for (int64_t x : d.shape)
            elems *= uint64_t(x);
          d.bytes = elems * dtypeSize(d.dtype);
        }
        if (&out == &inputs)
          flexibleInput.push_back(len(io->host_shape()) != 0);
        out.push_back(std::move(d));
      }
    };
    add(m->inputs(), inputs);
    add(m->outputs(), outputs);
    add(m->variables(), variables);
    for (uint32_t i = 0; i < len(m->variables()); ++i)
      variableTensors.push_back(m->variables()->Get(i)->tensor());
  }

  // --- execution -----------------------------------------------------------

  void execute(uint32_t index) {
    auto t0 = Clock::now();
    ComputeSetPlan &plan = computeSets[index];
    runComputeSet(plan, *pool);
    double s = secondsSince(t0);
    ComputeSetReport &rep = report.computeSets[index];
    for (const auto &[ipu, cycles] : plan.ipuCycles)
      report.ipus[ipu].computeCycles += cycles;
    rep.runs++;
    rep.cycles += plan.cycles;
    rep.seconds += s;
    report.cycles.compute += plan.cycles;
    report.seconds.compute += s;
    if (!checksAfter[index].empty())
      checkAfter(index);
  }

  // The compiler's run-time checks of compute set `index` (verified: whole
  // [flag, value, position] records of int64, in range): the first record
  // with its flag set, on any replica, stops the run with the check's message.
  void checkAfter(uint32_t index) {
    for (const fb::Check *c : checksAfter[index]) {
      const fb::Tensor &t = *root.tensors()->Get(c->tensor());
      for (uint32_t r = 0; r < replicas; ++r)
        popef::forEachInterval(t, [&](const fb::TileInterval &iv) { // in tensor order: the first record first
          for (uint64_t at = 0; at < iv.bytes(); at += 24) {
            int64_t record[3];
            std::memcpy(record, memory->tile(tileOf(iv.tile(), r)) + iv.offset() + at, sizeof record);
            if (record[0] == 0)
              continue;
            std::string message = c->message()->str();
            auto fill = [&](const std::string &name, int64_t v) {
              for (size_t p = message.find(name); p != std::string::npos; p = message.find(name, p))
                message.replace(p, name.size(), std::to_string(v));
            };
            fill("{value}", record[1]);
            fill("{position}", record[2]);
            fail("{}: {}{}", label, message, totalReplicas > 1 ? fmt::format(" (replica {})", firstReplica + r) : "");
          }
        });
    }
  }

  void performCopies(ExchangePlan &plan) {
    if (plan.broadcastFrom >= 0 && replicaLink) {
      performBroadcast(plan);
      return;
    }
    performLocalCopies(plan, *pool);
    if (!plan.remote.empty())
      link->exchange(plan.remote, *memory);
  }

  // The popef's load program: exchanges that lay constants out where their
  // consumers read them (Poplar's createWeights). They run once, here, after
  // the constants are written; like the constants' own upload they are not
  // part of any run's cycles or time.
  void runLoadProgram() {
    const fb::Program *load = root.load();
    if (!load || !load->children())
      return;
    // A load-only step is planned before its first run here and dropped
    // after its last.
    std::vector<uint32_t> lastRun(loadOnly.size(), 0);
    for (uint32_t i = 0; i < load->children()->size(); ++i)
      lastRun[load->children()->Get(i)->index()] = i;
    std::vector<bool> planned(loadOnly.size(), false);
    for (uint32_t i = 0; i < load->children()->size(); ++i) {
      const uint32_t e = load->children()->Get(i)->index();
      if (loadOnly[e] && !planned[e]) {
        planExchange(e);
        planned[e] = true;
      }
      performCopies(exchanges[e]);
      report.loadExchangeBytes += exchanges[e].cost.bytes * replicas;
      if (loadOnly[e] && lastRun[e] == i)
        exchanges[e] = ExchangePlan{};
    }
  }

  void exchange(uint32_t index) {
    auto t0 = Clock::now();
    ExchangePlan &plan = exchanges[index];
    performCopies(plan);
    if (!plan.remote.empty()) {
      for (const RemoteCopy &c : plan.remote)
        report.interIpuBytes += c.bytes;
      for (const auto &[ipu, bytes] : plan.ipuSent)
        report.ipus[ipu].linkBytesSent += bytes;
      for (const auto &[ipu, bytes] : plan.ipuReceived)
        report.ipus[ipu].linkBytesReceived += bytes;
    }
    double s = secondsSince(t0);
    ExchangeReport &rep = report.exchanges[index];
    rep.runs++;
    rep.cycles += plan.cost.sync + plan.cost.transfer;
    rep.seconds += s;
    report.cycles.sync += plan.cost.sync;
    (rep.hostLink ? report.cycles.host : report.cycles.exchange) += plan.cost.transfer;
    report.seconds.exchange += s;
  }

  void streamCopy(uint32_t index) {
    auto t0 = Clock::now();
    const fb::HostStream *stream = root.streams()->Get(index);
    const fb::Tensor &t = *root.tensors()->Get(stream->tensor());
    uint64_t bytes = popef::tensorBytes(t);
    // The host buffer is a FIFO of chunks: execution k of this stream uses
    // chunk k (k-th transfer for outputs), one per replica side by side.
    const uint64_t k = streamCalls[index]++;
    const uint64_t chunks = bytes ? std::max<uint64_t>(1, streamHostBytes[index] / bytes) : 1;
    auto chunk = [&](uint64_t slot, uint32_t r) {
      return ((slot * totalReplicas + firstReplica + r) % chunks) * bytes;
    };
    if (index < streamCallbacks.size() && streamCallbacks[index] && !streamSource[index] && !streamSink[index]) {
      streamViaCallback(index, t, bytes);
    } else if (stream->direction() == fb::StreamDirection::HostToDevice) {
      if (!streamSource[index])
        fail("{}: host stream '{}' has no host data (it is not a model input)", label,
             stream->name() ? stream->name()->str() : "");
      for (uint32_t r = 0; r < replicas; ++r)
        scatter(t, streamSource[index] + (streamHostBytes[index] ? chunk(k, r) : 0), r);
      report.hostBytesIn += bytes * replicas;
    } else {
      const uint32_t every = std::max(1u, stream->every()), group = std::max(1u, stream->group());
      if ((k / group) % every != every - 1) {
        report.seconds.host += secondsSince(t0);
        return; // anchor EVERYN / FINAL / SUM: not this micro-batch
      }
      const uint64_t slot = streamMoves[index]++;
      if (streamSink[index]) {
        for (uint32_t r = 0; r < replicas; ++r)
          gather(t, streamSink[index] + (streamHostBytes[index] ? chunk(slot, r) : 0), r);
        streamed[index] = true;
      }
      report.hostBytesOut += bytes * replicas;
    }
    StreamCost cost = streamCopyCost(target, bytes * replicas);
    report.cycles.sync += cost.sync;
    report.cycles.host += cost.host;
    report.seconds.host += secondsSince(t0);
  }

  void checkStop() {
    if (stop && stop->load(std::memory_order_relaxed))
      throw Stopped(fmt::format("{}: run stopped between steps (the stop flag was set)", label));
  }

  void exec(const fb::Program &p) {
    checkStop();
    if (observer) [[unlikely]]
      observer->onProgram(p);
    switch (p.kind()) {
    case fb::ProgramKind::Sequence:
      if (p.parallel() && p.children()) {
        // Children on different IPUs at the same time (a pipeline cycle):
        // the cycle costs as much as its slowest IPU, whose children (two
        // stages of a training pipeline, a stash) add up.
        const PhaseCycles start = report.cycles;
        std::map<int32_t, PhaseCycles> ipus; // (a child without an IPU: one of its own)
        int32_t unnamed = -1;
        for (const fb::Program *c : *p.children()) {
          const int32_t ipu = c->ipu() >= 0 ? c->ipu() : unnamed--;
          auto [it, added] = ipus.try_emplace(ipu, start);
          report.cycles = it->second;
          exec(*c);
          it->second = report.cycles;
        }
        PhaseCycles slowest = start;
        for (const auto &[ipu, cycles] : ipus)
          if (cycles.total() > slowest.total())
            slowest = cycles;
        report.cycles = slowest;
      } else if (p.children())
        for (const fb::Program *c : *p.children())
          exec(*c);
      break;
    case fb::ProgramKind::Repeat:
      for (uint32_t i = 0; i < p.count() && p.children(); ++i) {
        checkStop();
        for (const fb::Program *c : *p.children())
          exec(*c);
      }
      break;
    case fb::ProgramKind::Execute: execute(p.index()); break;
    case fb::ProgramKind::Exchange: exchange(p.index()); break;
    case fb::ProgramKind::StreamCopy: streamCopy(p.index()); break;
    case fb::ProgramKind::Call: exec(*root.functions()->Get(p.index())); break;
    case fb::ProgramKind::Sync: report.cycles.sync += syncCycles(target); break;
    case fb::ProgramKind::If:
      exec(*p.children()->Get(readScalar(p.tensor()) != 0 ? 0 : 1));
      break;
    case fb::ProgramKind::RepeatWhileTrue:
      for (exec(*p.children()->Get(0)); readScalar(p.tensor()) != 0; exec(*p.children()->Get(0)))
        exec(*p.children()->Get(1));
      break;
    case fb::ProgramKind::Switch: {
      const int64_t v = readScalar(p.tensor());
      uint32_t branch = len(p.case_values());
      for (uint32_t i = 0; i < len(p.case_values()); ++i)
        if (p.case_values()->Get(i) == v) {
          branch = i;
          break;
        }
      exec(*p.children()->Get(branch));
      break;
    }
    case fb::ProgramKind::PrintTensor: printTensor(p); break;
    }
  }

  // --- graph API support (control on tile memory, host access) -------------

  std::vector<uint8_t> tensorBytesOf(uint32_t index) {
    const fb::Tensor &t = *root.tensors()->Get(index);
    std::vector<uint8_t> bytes(popef::tensorBytes(t));
    gather(t, bytes.data());
    return bytes;
  }

  // First element of a tensor as an integer (floats truncated, NaN true): the
  // predicate of If / RepeatWhileTrue and the control value of Switch.
  int64_t readScalar(uint32_t index) {
    const fb::Tensor &t = *root.tensors()->Get(index);
    const DType dtype = static_cast<DType>(t.dtype());
    uint8_t raw[8] = {};
    // Verified: not empty, sorted by begin (the first element is in the stored intervals).
    for (uint32_t k = 0; k < len(t.mapping()) && t.mapping()->Get(k)->begin() == 0; ++k) {
      const fb::TileInterval *iv = t.mapping()->Get(k);
      std::memcpy(raw, memory->tile(iv->tile()) + iv->offset(), std::min<uint64_t>(iv->bytes(), dtypeSize(dtype)));
    }
    report.cycles.sync += controlReadCycles(target); // the branch waits for the value
    return scalarAsInt(dtype, raw);
  }

  // Poplar's format: "name: {1,1.5,2}"; a matrix one row per line.
  void printTensor(const fb::Program &p) {
    const fb::Tensor &t = *root.tensors()->Get(p.tensor());
    const std::vector<uint8_t> bytes = tensorBytesOf(p.tensor());
    const std::string text = formatTensor(static_cast<DType>(t.dtype()), popef::tensorShape(t), bytes);
    report.cycles.sync += printTensorCycles(target);
    const std::string line = fmt::format("{}: {}", p.name() ? p.name()->str() : "", text);
    if (printHandler)
      printHandler(line);
    else
      fmt::print("{}\n", line);
  }

  void streamViaCallback(uint32_t index, const fb::Tensor &t, uint64_t bytes) {
    std::vector<uint8_t> buffer(bytes);
    if (root.streams()->Get(index)->direction() == fb::StreamDirection::HostToDevice) {
      streamCallbacks[index](buffer.data(), bytes);
      scatter(t, buffer.data());
      report.hostBytesIn += bytes;
    } else {
      gather(t, buffer.data());
      streamCallbacks[index](buffer.data(), bytes);
      report.hostBytesOut += bytes;
    }
  }

  void checkInputs(const HostTensorMap &given) const {
    std::vector<std::string> problems;
    for (const IoDesc &io : inputs) {
      auto it = given.find(io.name);
      if (it == given.end()) {
        problems.push_back(fmt::format("missing '{}'", io.name));
        continue;
      }
      const HostTensor &h = it->second;
      if (h.dtype != io.dtype)
        problems.push_back(fmt::format("'{}' has dtype {}, expected {}", io.name, dtypeName(h.dtype),
                                       dtypeName(io.dtype)));
      else if (h.shape != io.shape && !(flexibleInput[&io - inputs.data()] && h.data.size() == io.bytes))
        problems.push_back(fmt::format("'{}' has shape {}, expected {}", io.name,
                                       shapeToString(h.shape), shapeToString(io.shape)));
      else if (h.data.size() != io.bytes)
        problems.push_back(fmt::format("'{}' has {} bytes of data, expected {}", io.name,
                                       h.data.size(), io.bytes));
    }
    for (const auto &[name, tensor] : given)
      if (std::none_of(inputs.begin(), inputs.end(), [&](const IoDesc &io) { return io.name == name; }))
        problems.push_back(fmt::format("unexpected input '{}'", name));
    if (!problems.empty()) {
      std::string list;
      for (const auto &p : problems)
        list += (list.empty() ? "" : "; ") + p;
      fail("inputs do not match {}: {}. Expected inputs: {}", label, list, ioList(inputs));
    }
  }

  HostTensorMap run(const HostTensorMap &given) {
    if (!jitted)
      fail("{}: engine was built with skipJit; it cannot run", label);
    checkInputs(given);
    auto t0 = Clock::now();
    const fb::Metadata *m = root.metadata();
    std::fill(streamSource.begin(), streamSource.end(), nullptr);
    std::fill(streamSink.begin(), streamSink.end(), nullptr);
    std::fill(streamed.begin(), streamed.end(), false);
    std::fill(streamHostBytes.begin(), streamHostBytes.end(), 0);
    std::fill(streamCalls.begin(), streamCalls.end(), 0);
    std::fill(streamMoves.begin(), streamMoves.end(), 0);
    static const uint8_t kNoBytes[1] = {}; // non-null stand-in for empty tensors
    for (uint32_t i = 0; i < inputs.size(); ++i) {
      const auto &data = given.at(inputs[i].name).data;
      streamSource[m->inputs()->Get(i)->stream()] = data.empty() ? kNoBytes : data.data();
      streamHostBytes[m->inputs()->Get(i)->stream()] = data.size();
    }
    HostTensorMap result;
    for (uint32_t i = 0; i < outputs.size(); ++i) {
      HostTensor &h = result[outputs[i].name];
      h.dtype = outputs[i].dtype;
      h.shape = outputs[i].shape;
      h.data.assign(outputs[i].bytes, 0);
      streamSink[m->outputs()->Get(i)->stream()] = h.data.empty() ? sinkForEmpty : h.data.data();
      streamHostBytes[m->outputs()->Get(i)->stream()] = h.data.size();
    }
    exec(*root.main());
    for (uint32_t i = 0; i < outputs.size(); ++i)
      if (!streamed[m->outputs()->Get(i)->stream()])
        log::get("runtime")->warn("{}: output '{}' was never copied to the host; it reads as zeros",
                                  label, outputs[i].name);
    std::fill(streamSource.begin(), streamSource.end(), nullptr);
    std::fill(streamSink.begin(), streamSink.end(), nullptr);
    report.runs++;
    report.runSeconds += secondsSince(t0);
    return result;
  }
};

Engine::Engine(std::shared_ptr<const popef::Executable> executable, EngineOptions options)
    : impl_(std::make_unique<Impl>(std::move(executable), std::move(options))) {}
Engine::~Engine() = default;

const std::vector<IoDesc> &Engine::inputs() const { return impl_->inputs; }
const std::vector<IoDesc> &Engine::outputs() const { return impl_->outputs; }
std::string Engine::describeInputs() const { return ioList(impl_->inputs); }
void Engine::checkInputs(const HostTensorMap &inputs) const { impl_->checkInputs(inputs); }

std::vector<ByteRange> replicaChunks(uint64_t hostBytes, uint64_t chunkBytes, uint32_t replicas, uint32_t first,
                                     uint32_t count) {
  if (chunkBytes == 0 || hostBytes % chunkBytes || (hostBytes / chunkBytes) % replicas)
    return {{0, hostBytes}};
  std::vector<ByteRange> ranges;
  for (uint64_t slot = 0; slot < hostBytes / chunkBytes / replicas; ++slot)
    ranges.push_back({(slot * replicas + first) * chunkBytes, uint64_t(count) * chunkBytes});
  return ranges;
}
HostTensorMap Engine::run(const HostTensorMap &inputs) { return impl_->run(inputs); }
const Report &Engine::report() const { return impl_->report; }
const popef::Executable &Engine::executable() const { return *impl_->exe; }

uint32_t Engine::numPrograms() const {
  const fb::Program *m = impl_->root.main();
  return m && m->children() ? m->children()->size() : 0;
}

void Engine::runProgram(uint32_t index) {
  Impl &im = *impl_;
  if (index >= numPrograms())
    fail("{}: program {} does not exist (the executable has {})", im.label, index, numPrograms());
  if (!im.jitted)
    fail("{}: engine was built with skipJit; it cannot run", im.label);
  auto t0 = Clock::now();
  im.exec(*im.root.main()->children()->Get(index));
  im.report.runs++;
  im.report.runSeconds += secondsSince(t0);
}

void Engine::connectStream(const std::string &stream, StreamCallback callback) {
  Impl &im = *impl_;
  im.streamCallbacks.resize(len(im.root.streams()));
  for (uint32_t i = 0; i < len(im.root.streams()); ++i)
    if (im.root.streams()->Get(i)->name() && im.root.streams()->Get(i)->name()->str() == stream) {
      im.streamCallbacks[i] = std::move(callback);
      return;
    }
  fail("{}: no host stream named '{}'", im.label, stream);
}

void Engine::writeTensor(uint32_t tensor, const void *data, uint64_t bytes) {
  Impl &im = *impl_;
  if (tensor >= len(im.root.tensors()) || popef::tensorBytes(*im.root.tensors()->Get(tensor)) != bytes)
    fail("{}: writeTensor: tensor {} does not exist or does not have {} bytes", im.label, tensor, bytes);
  im.scatter(*im.root.tensors()->Get(tensor), static_cast<const uint8_t *>(data));
}

void Engine::readTensor(uint32_t tensor, void *data, uint64_t bytes) {
  Impl &im = *impl_;
  if (tensor >= len(im.root.tensors()) || popef::tensorBytes(*im.root.tensors()->Get(tensor)) != bytes)
    fail("{}: readTensor: tensor {} does not exist or does not have {} bytes", im.label, tensor, bytes);
  im.gather(*im.root.tensors()->Get(tensor), static_cast<uint8_t *>(data));
}

const std::vector<IoDesc> &Engine::variables() const { return impl_->variables; }

namespace {
size_t variableIndex(const std::vector<IoDesc> &vars, const std::string &name, const std::string &label) {
  for (size_t i = 0; i < vars.size(); ++i)
    if (vars[i].name == name)
      return i;
  fail("{}: no variable named '{}' (variables: {})", label, name, vars.empty() ? "none, not a training executable" : ioList(vars));
}
} // namespace

HostTensor Engine::readVariable(const std::string &name) {
  Impl &im = *impl_;
  const size_t i = variableIndex(im.variables, name, im.label);
  const IoDesc &d = im.variables[i];
  HostTensor t{d.dtype, d.shape, std::vector<uint8_t>(d.bytes)};
  im.gather(*im.root.tensors()->Get(im.variableTensors[i]), t.data.data());
  return t;
}

void Engine::writeVariable(const std::string &name, const HostTensor &value) {
  Impl &im = *impl_;
  const size_t i = variableIndex(im.variables, name, im.label);
  const IoDesc &d = im.variables[i];
  if (value.dtype != d.dtype || value.shape != d.shape || value.data.size() != d.bytes)
    fail("{}: variable '{}' is {} {}, got {} {}", im.label, name, dtypeName(d.dtype), shapeToString(d.shape),
         dtypeName(value.dtype), shapeToString(value.shape));
  for (uint32_t r = 0; r < im.replicas; ++r)
    im.scatter(*im.root.tensors()->Get(im.variableTensors[i]), value.data.data(), r);
}

void Engine::setPrintHandler(std::function<void(const std::string &)> handler) {
  impl_->printHandler = std::move(handler);
}

void Engine::resetReport() {
  Report &r = impl_->report;
  r.runs = 0;
  r.runSeconds = 0;
  r.hostBytesIn = r.hostBytesOut = 0;
  r.cycles = {};
  r.seconds = {};
  for (auto &c : r.computeSets)
    c.runs = c.cycles = 0, c.seconds = 0;
  for (auto &e : r.exchanges)
    e.runs = e.cycles = 0, e.seconds = 0;
  r.interIpuBytes = 0;
  for (auto &ipu : r.ipus)
    ipu = {};
}

} // namespace popc::runtime
