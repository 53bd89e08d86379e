#include "runtime/engine.h"

#include "runtime/bitcode_gate.h"
#include "runtime/bitcode_probe.h"
#include "runtime/cycle_model.h"
#include "runtime/device_memory.h"
#include "runtime/jit.h"
#include "runtime/memory_sandbox.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/float16.h"
#include "support/log.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <functional>
#include <chrono>
#include <cstring>
#include <numeric>

namespace popc::runtime {

namespace fb = ::popef::fb;
using popef::len;

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Below these sizes a step runs on the control thread alone: waking the pool
// costs a few microseconds, more than the work itself.
// (A host core runs a few estimated IPU cycles of vertex work per nanosecond.)
constexpr uint64_t kParallelCopyBytes = 256 << 10;
constexpr uint64_t kParallelComputeCycles = 200000; // sum of vertex cycle estimates

struct VertexCall {
  VertexFn fn;
  const uint32_t *fields; // into the executable's field_offsets
};
struct TileWork {
  uint8_t *base;
  uint32_t begin, end; // range in ComputeSetPlan::calls
};
struct ComputeSetPlan {
  std::vector<VertexCall> calls; // grouped by tile, one type after another
  std::vector<TileWork> tiles;
  std::vector<uint32_t> chunks; // chunk k = tiles[chunks[k], chunks[k+1]), similar work each
  uint64_t cycles = 0;
  std::vector<std::pair<uint32_t, uint64_t>> ipuCycles; // (IPU, its busiest tile) for the report
};

struct CopyOp {
  uint8_t *dst;
  const uint8_t *src;
  uint32_t bytes;
  uint32_t count = 1;                   // a strided record: count copies of `bytes`
  uint32_t srcStride = 0, dstStride = 0;
};
// Exchange lists often hold many copies of a few bytes; a libc call each
// would dominate, so short ones are done inline (ranges never overlap).
inline void copyBytes(uint8_t *dst, const uint8_t *src, uint32_t n) {
  if (n > 16) {
    std::memcpy(dst, src, n);
  } else if (n >= 8) {
    uint64_t a, b;
    std::memcpy(&a, src, 8);
    std::memcpy(&b, src + n - 8, 8);
    std::memcpy(dst, &a, 8);
    std::memcpy(dst + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    std::memcpy(&a, src, 4);
    std::memcpy(&b, src + n - 4, 4);
    std::memcpy(dst, &a, 4);
    std::memcpy(dst + n - 4, &b, 4);
  } else {
    for (uint32_t i = 0; i < n; ++i)
      dst[i] = src[i];
  }
}

struct ExchangePlan {
  std::vector<CopyOp> local;        // on-IPU copies, sorted by destination
  std::vector<uint32_t> chunks;     // chunk k = local[chunks[k], chunks[k+1]); whole dst tiles
  std::vector<RemoteCopy> remote;   // cross-IPU, via IpuLink
  // A cross-replica step whose source replica may be in another instance
  // (ReplicaLink): the source bytes, packed in `copies` order, are broadcast
  // from the instance holding replica `broadcastFrom`, then copied into
  // every local replica. Tiles in `copies` are replica-relative.
  int32_t broadcastFrom = -1;
  std::vector<RemoteCopy> broadcastCopies;
  std::vector<uint8_t> broadcastBuffer;
  std::vector<std::pair<uint32_t, uint64_t>> ipuSent, ipuReceived; // per IPU, for the report
  ExchangeCost cost;
};

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

  Impl(std::shared_ptr<const popef::Executable> e, EngineOptions options)
      : exe(std::move(e)), root(exe->root()), target(*root.target()), label(exe->label()),
        link(options.ipuLink ? options.ipuLink : makeInProcessIpuLink()), replicaLink(options.replicaLink),
        observer(options.observer) {
    collectCodeModules();
    // Fork before any thread of ours exists: a thread holding an allocator lock at
    // fork time (ASan's is not fork-safe) would deadlock the child.
    if (!options.skipJit && options.probeCodeInChild) {
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
    auto t0 = Clock::now();
    if (options.skipJit) {
      typeFns.assign(len(root.vertex_types()), nullptr);
    } else {
      compile();
      jitted = true;
      report.hostCpu = jit->hostCpu();
    }
    report.jitSeconds = secondsSince(t0);

    t0 = Clock::now();
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
    memory = std::make_unique<DeviceMemory>(tilesPerReplica * replicas, target.bytes_per_tile());
    auto phase = [&, t = Clock::now()](const char *what) mutable {
      log::get("runtime")->debug("{}: load: {} {:.3f} s", label, what, secondsSince(t));
      t = Clock::now();
    };
    // The verified file's pages leave this process's resident memory before
    // the tiles' come in; the constants bring back just their own.
    exe->releaseMappedPages();
    populateTiles();
    phase("tile memory");
    loadConstants();
    exe->releaseMappedPages();
    phase("constants");
    planComputeSets();
    phase("compute set tables");
    planExchanges();
    phase("exchange tables");
    runLoadProgram();
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

  void compile() {
    uint32_t nTypes = len(root.vertex_types());
    jit = std::make_unique<Jit>(pool.get());
    for (uint32_t m = 0; m < modules.size(); ++m) {
      // Types sharing a symbol get the smallest field table (the strictest).
      MemorySandbox sandbox;
      sandbox.halfStride = DeviceMemory::strideFor(target.bytes_per_tile()) / 2;
      sandbox.guard = DeviceMemory::kGuardBytes;
      for (uint32_t t = 0; t < nTypes; ++t) {
        const fb::VertexType *vt = root.vertex_types()->Get(t);
        if (vt->module_() != m)
          continue;
        unsigned fields = len(vt->fields());
        auto [it, added] = sandbox.entryFieldCounts.emplace(vt->symbol()->str(), fields);
        if (!added)
          it->second = std::min(it->second, fields);
      }
      std::string where = fmt::format("{}: code module {}", label, m);
      auto context = std::make_unique<llvm::LLVMContext>();
      auto module = loadCodeModule(*context, modules[m].bitcode, where, modules[m].entrySymbols);
      jit->addModule(std::move(module), std::move(context), where, &sandbox);
    }
    typeFns.resize(nTypes);
    for (uint32_t t = 0; t < nTypes; ++t) {
      const fb::VertexType *vt = root.vertex_types()->Get(t);
      typeFns[t] = jit->lookup(vt->symbol()->str(), fmt::format("{}: code module {}", label, vt->module_()));
    }
  }

  // A tensor without bytes has no mapping vector at all (flatbuffers omits empty ones).
  // Replica r's copy of a tile.
  uint32_t tileOf(uint32_t tile, uint32_t r) const { return tile + r * tilesPerReplica; }
  void scatter(const fb::Tensor &t, const uint8_t *host, uint32_t r = 0) {
    if (!t.mapping())
      return;
    for (const fb::TileInterval *iv : *t.mapping())
      std::memcpy(memory->tile(tileOf(iv->tile(), r)) + iv->offset(), host + iv->begin(), iv->bytes());
  }
  void gather(const fb::Tensor &t, uint8_t *host, uint32_t r = 0) {
    if (!t.mapping())
      return;
    for (const fb::TileInterval *iv : *t.mapping())
      std::memcpy(host + iv->begin(), memory->tile(tileOf(iv->tile(), r)) + iv->offset(), iv->bytes());
  }

  // The tiles' planned memory, mapped up front on every host thread: the
  // constants, the load program and the first run would otherwise fault it in
  // a page at a time.
  void populateTiles() {
    const uint32_t planned = len(root.tile_bytes_used());
    pool->parallelFor(size_t(planned) * replicas, [this, planned](size_t i) {
      const uint32_t t = uint32_t(i % planned), r = uint32_t(i / planned);
      memory->populate(tileOf(t, r), root.tile_bytes_used()->Get(t));
    });
  }

  void loadConstants() {
    for (uint32_t i = 0; i < len(root.tensors()); ++i) {
      const fb::Tensor *t = root.tensors()->Get(i);
      if (t->constant() >= 0 && t->mapping())
        for (uint32_t r = 0; r < replicas; ++r)
          scatter(*t, exe->constant(uint32_t(t->constant())).data(), r);
    }
  }

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
    std::vector<uint64_t> costs;
    const fb::ComputeSet *cs = root.compute_sets()->Get(c);
    ComputeSetPlan &plan = computeSets[c];
    ComputeSetReport &rep = report.computeSets[c];
    rep.name = cs->name() ? cs->name()->str() : fmt::format("cs{}", c);
    uint32_t nv = len(cs->vertices());
    rep.vertices = nv;
    uint64_t work = 0;
    std::vector<uint32_t> order(nv);
    std::iota(order.begin(), order.end(), 0u);
    auto key = [&](uint32_t v) {
      const fb::Vertex *x = cs->vertices()->Get(v);
      return std::pair(x->tile(), x->type());
    };
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    plan.calls.reserve(nv);
    for (uint32_t k = 0; k < nv; ++k) {
      const fb::Vertex *v = cs->vertices()->Get(order[k]);
      if (plan.tiles.empty() || cs->vertices()->Get(order[k - 1])->tile() != v->tile()) {
        if (!plan.tiles.empty())
          plan.tiles.back().end = k;
        plan.tiles.push_back({memory->tile(v->tile()), k, nv});
      }
      // Vertices without fields may come with no field_offsets vector.
      const uint32_t *offsets = cs->field_offsets() ? cs->field_offsets()->data() + v->fields_begin() : nullptr;
      plan.calls.push_back({typeFns[v->type()], offsets});
    }
    std::vector<uint64_t> tileWork;
    for (const TileWork &tw : plan.tiles) {
      costs.clear();
      for (uint32_t k = tw.begin; k < tw.end; ++k)
        costs.push_back(root.vertex_types()->Get(cs->vertices()->Get(order[k])->type())->cycles());
      const uint64_t tileCycles = tileComputeCycles(costs, target.workers_per_tile());
      plan.cycles = std::max(plan.cycles, tileCycles);
      const uint32_t ipu = cs->vertices()->Get(order[tw.begin])->tile() / target.tiles_per_ipu();
      if (plan.ipuCycles.empty() || plan.ipuCycles.back().first != ipu)
        plan.ipuCycles.push_back({ipu, 0}); // vertices are in tile order, so IPUs come in order
      plan.ipuCycles.back().second = std::max(plan.ipuCycles.back().second, tileCycles);
      tileWork.push_back(std::accumulate(costs.begin(), costs.end(), uint64_t(0)));
      work += tileWork.back();
    }
    // Replicas run the same vertices on their own tiles, at the same time.
    const size_t oneReplica = plan.tiles.size();
    for (uint32_t r = 1; r < replicas; ++r)
      for (size_t i = 0; i < oneReplica; ++i) {
        const TileWork &tw = plan.tiles[i];
        const uint32_t tile = cs->vertices()->Get(order[tw.begin])->tile();
        plan.tiles.push_back({memory->tile(tileOf(tile, r)), tw.begin, tw.end});
        tileWork.push_back(tileWork[i]);
        work += tileWork[i];
      }
    // Contiguous runs of tiles, a few per thread (few atomics, neighbouring
    // tiles together); one chunk when the step is too small to share.
    uint64_t target = work < kParallelComputeCycles ? work + 1 : work / (4 * pool->size()) + 1;
    plan.chunks.push_back(0);
    uint64_t acc = 0;
    for (uint32_t i = 0; i < tileWork.size(); ++i) {
      acc += tileWork[i];
      if (acc >= target && i + 1 < tileWork.size()) {
        plan.chunks.push_back(i + 1);
        acc = 0;
      }
    }
    plan.chunks.push_back(static_cast<uint32_t>(plan.tiles.size()));
    rep.tiles = static_cast<uint32_t>(plan.tiles.size() / replicas);
    rep.cyclesPerRun = plan.cycles;
  }

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
    pool->parallelFor(n, [this](size_t e) { planExchange(uint32_t(e)); });
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
    ExchangePlan &plan = exchanges[e];
    std::vector<const fb::Copy *> local;
    local.reserve(len(step->copies()));
    // A cross-replica step: every replica reads replica from_replica's sources,
    // all over the links (the simulated replicas are IPUs of their own).
    const int32_t fromReplica = step->from_replica();
    if (fromReplica >= 0 && replicaLink) {
      planBroadcast(e, *step);
      return;
    }
    for (uint32_t i = 0; i < len(step->copies()); ++i) {
      const fb::Copy *c = step->copies()->Get(i);
      if (fromReplica >= 0) {
        for (uint32_t r = 0; r < replicas; ++r)
          for (uint64_t k = 0; k < popef::copyCount(*c); ++k)
            plan.remote.push_back({tileOf(c->src_tile(), uint32_t(fromReplica)),
                                   uint32_t(c->src_offset() + k * c->src_stride()), tileOf(c->dst_tile(), r),
                                   uint32_t(c->dst_offset() + k * c->dst_stride()), c->bytes()});
        continue;
      }
      if (c->src_tile() / target.tiles_per_ipu() != c->dst_tile() / target.tiles_per_ipu()) {
        auto add = [&](auto &list, uint32_t ipu) {
          auto it = std::find_if(list.begin(), list.end(), [&](const auto &p) { return p.first == ipu; });
          (it == list.end() ? list.emplace_back(ipu, 0) : *it).second += popef::copyTotalBytes(*c) * replicas;
        };
        add(plan.ipuSent, c->src_tile() / target.tiles_per_ipu());
        add(plan.ipuReceived, c->dst_tile() / target.tiles_per_ipu());
        // The link moves single copies: a strided record is expanded (verified in range).
        for (uint32_t r = 0; r < replicas; ++r)
          for (uint64_t k = 0; k < popef::copyCount(*c); ++k)
            plan.remote.push_back({tileOf(c->src_tile(), r), uint32_t(c->src_offset() + k * c->src_stride()),
                                   tileOf(c->dst_tile(), r), uint32_t(c->dst_offset() + k * c->dst_stride()),
                                   c->bytes()});
      } else if (c->bytes()) {
        local.push_back(c);
      }
    }
    // The compiler writes records sorted by destination (popef.fbs); any other order is sorted here.
    auto byDestination = [](const fb::Copy *a, const fb::Copy *b) {
      return std::pair(a->dst_tile(), a->dst_offset()) < std::pair(b->dst_tile(), b->dst_offset());
    };
    if (!std::is_sorted(local.begin(), local.end(), byDestination))
      std::stable_sort(local.begin(), local.end(), byDestination);
    plan.local.reserve(local.size() * replicas);
    uint64_t total = 0;
    // Merge copies that continue the previous one at both ends (the copy
    // list may come uncoalesced); chunk boundaries below use destination tiles.
    std::vector<const fb::Copy *> firstOfOp;
    firstOfOp.reserve(local.size());
    for (const fb::Copy *c : local) {
      uint8_t *dst = memory->tile(c->dst_tile()) + c->dst_offset();
      const uint8_t *src = memory->tile(c->src_tile()) + c->src_offset();
      total += popef::copyTotalBytes(*c);
      if (!plan.local.empty() && c->repeat() == 0) {
        CopyOp &last = plan.local.back();
        if (last.count == 1 && firstOfOp.back()->dst_tile() == c->dst_tile() && last.dst + last.bytes == dst &&
            last.src + last.bytes == src && uint64_t(last.bytes) + c->bytes() <= UINT32_MAX) {
          last.bytes += c->bytes();
          continue;
        }
      }
      plan.local.push_back({dst, src, c->bytes(), c->repeat() + 1, c->src_stride(), c->dst_stride()});
      firstOfOp.push_back(c);
    }
    local = std::move(firstOfOp);
    // Replicas: the same copies on each replica's tiles (blocks stay sorted by destination).
    std::vector<uint32_t> dstTiles;
    dstTiles.reserve(plan.local.size() * replicas);
    for (const fb::Copy *c : local)
      dstTiles.push_back(c->dst_tile());
    const size_t oneReplica = plan.local.size();
    for (uint32_t r = 1; r < replicas; ++r)
      for (size_t i = 0; i < oneReplica; ++i) {
        const fb::Copy *c = local[i];
        CopyOp op = plan.local[i];
        op.dst = memory->tile(tileOf(c->dst_tile(), r)) + c->dst_offset();
        op.src = memory->tile(tileOf(c->src_tile(), r)) + c->src_offset();
        plan.local.push_back(op);
        dstTiles.push_back(tileOf(c->dst_tile(), r));
      }
    total *= replicas;
    // Chunks of whole destination tiles, a few per thread, so one tile's
    // memory is written by one thread.
    uint64_t chunkBytes = total < kParallelCopyBytes
                              ? total + 1
                              : std::max<uint64_t>(16 << 10, total / (4 * pool->size()));
    plan.chunks.push_back(0);
    uint64_t acc = 0;
    for (size_t i = 0; i < dstTiles.size(); ++i) {
      if (acc >= chunkBytes && dstTiles[i] != dstTiles[i - 1]) {
        plan.chunks.push_back(static_cast<uint32_t>(i));
        acc = 0;
      }
      acc += uint64_t(plan.local[i].bytes) * plan.local[i].count;
    }
    plan.chunks.push_back(static_cast<uint32_t>(dstTiles.size()));
    plan.cost = runInMain[e] ? exchangeCost(target, *step) : exchangeVolume(target, *step);
    describeExchange(e, *step, false);
  }

  void describeExchange(uint32_t e, const fb::ExchangeStep &step, bool hostLink) {
    const ExchangePlan &plan = exchanges[e];
    ExchangeReport &rep = report.exchanges[e];
    rep.name = step.name() ? step.name()->str() : fmt::format("exchange{}", e);
    rep.copies = len(step.copies());
    rep.bytes = plan.cost.bytes;
    rep.interIpu = plan.cost.interIpu;
    rep.hostLink = hostLink;
    rep.syncCyclesPerRun = plan.cost.sync;
    rep.transferCyclesPerRun = plan.cost.transfer;
  }

  // A cross-replica step when replicas live in several instances. Every
  // instance charges it the same (the step ends when the last replica has
  // its bytes): PopART's hostAllReduce, the source bytes to the host and back
  // over the host link, behind a global sync.
  void planBroadcast(uint32_t e, const fb::ExchangeStep &step) {
    ExchangePlan &plan = exchanges[e];
    plan.broadcastFrom = step.from_replica();
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < len(step.copies()); ++i) {
      const fb::Copy *c = step.copies()->Get(i);
      for (uint64_t k = 0; k < popef::copyCount(*c); ++k)
        plan.broadcastCopies.push_back({c->src_tile(), uint32_t(c->src_offset() + k * c->src_stride()), c->dst_tile(),
                                        uint32_t(c->dst_offset() + k * c->dst_stride()), c->bytes()});
      bytes += popef::copyTotalBytes(*c);
    }
    plan.broadcastBuffer.resize(bytes);
    plan.cost.bytes = bytes;
    plan.cost.interIpu = true;
    plan.cost.sync = target.global_sync_cycles();
    plan.cost.transfer = 2 * streamCopyCost(target, bytes).host;
    describeExchange(e, step, true);
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
    const TileWork *tiles = plan.tiles.data();
    const VertexCall *calls = plan.calls.data();
    const uint32_t *chunks = plan.chunks.data();
    pool->parallelFor(plan.chunks.size() - 1, [tiles, calls, chunks](size_t c) {
      for (uint32_t t = chunks[c]; t < chunks[c + 1]; ++t) {
        const TileWork &tw = tiles[t];
        for (uint32_t k = tw.begin; k < tw.end; ++k)
          calls[k].fn(tw.base, calls[k].fields);
      }
    });
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
        for (uint32_t k = 0; k < len(t.mapping()); ++k) { // (an empty tensor may have no mapping)
          const fb::TileInterval &iv = *t.mapping()->Get(k);
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
        }
    }
  }

  void performCopies(ExchangePlan &plan) {
    if (plan.broadcastFrom >= 0 && replicaLink) {
      performBroadcast(plan);
      return;
    }
    const CopyOp *ops = plan.local.data();
    const uint32_t *chunks = plan.chunks.data();
    pool->parallelFor(plan.chunks.size() - 1, [ops, chunks](size_t k) {
      for (uint32_t i = chunks[k]; i < chunks[k + 1]; ++i) {
        const CopyOp &op = ops[i];
        uint8_t *dst = op.dst;
        const uint8_t *src = op.src;
        for (uint32_t n = 0; n < op.count; ++n, dst += op.dstStride, src += op.srcStride)
          copyBytes(dst, src, op.bytes);
      }
    });
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
    for (const fb::Program *step : *load->children()) {
      ExchangePlan &plan = exchanges[step->index()];
      performCopies(plan);
      report.loadExchangeBytes += plan.cost.bytes * replicas;
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
        // the cycle costs as much as its slowest child.
        const PhaseCycles start = report.cycles;
        PhaseCycles slowest = start;
        for (const fb::Program *c : *p.children()) {
          report.cycles = start;
          exec(*c);
          if (report.cycles.total() > slowest.total())
            slowest = report.cycles;
        }
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
    case fb::ProgramKind::Sync: report.cycles.sync += target.sync_cycles(); break;
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
    for (const fb::TileInterval *iv : *t.mapping())
      if (iv->begin() == 0)
        std::memcpy(raw, memory->tile(iv->tile()) + iv->offset(), std::min<uint64_t>(iv->bytes(), dtypeSize(dtype)));
    report.cycles.sync += target.sync_cycles(); // the branch waits for the value
    return scalarAsInt(dtype, raw);
  }

  static int64_t scalarAsInt(DType dtype, const uint8_t *raw) {
    auto as = [&](auto v) {
      std::memcpy(&v, raw, sizeof v);
      return v;
    };
    switch (dtype) {
    case DType::F32: { float f = as(0.0f); return f != f ? 1 : int64_t(f); }
    case DType::F64: { double f = as(0.0); return f != f ? 1 : int64_t(f); }
    case DType::F16: { float f = halfToFloat(as(uint16_t(0))); return f != f ? 1 : int64_t(f); }
    case DType::BF16: { float f = bfloat16ToFloat(as(uint16_t(0))); return f != f ? 1 : int64_t(f); }
    case DType::I8: return as(int8_t(0));
    case DType::I16: return as(int16_t(0));
    case DType::I32: return as(int32_t(0));
    case DType::I64: return as(int64_t(0));
    case DType::U8: case DType::Bool: return as(uint8_t(0));
    case DType::U16: return as(uint16_t(0));
    case DType::U32: return as(uint32_t(0));
    case DType::U64: return int64_t(as(uint64_t(0)));
    }
    return 0;
  }

  static std::string formatElement(DType dtype, const uint8_t *raw) {
    auto as = [&](auto v) {
      std::memcpy(&v, raw, sizeof v);
      return v;
    };
    switch (dtype) {
    case DType::F32: return fmt::format("{:g}", as(0.0f));
    case DType::F64: return fmt::format("{:g}", as(0.0));
    case DType::F16: return fmt::format("0x{:04x}", as(uint16_t(0)));
    case DType::Bool: return as(uint8_t(0)) ? "true" : "false";
    case DType::U64: return fmt::format("{}", as(uint64_t(0)));
    default: return fmt::format("{}", scalarAsInt(dtype, raw));
    }
  }

  // Poplar's format: "name: {1,1.5,2}"; a matrix one row per line.
  void printTensor(const fb::Program &p) {
    const fb::Tensor &t = *root.tensors()->Get(p.tensor());
    const DType dtype = static_cast<DType>(t.dtype());
    const std::vector<uint8_t> bytes = tensorBytesOf(p.tensor());
    const Shape shape = popef::tensorShape(t);
    const size_t es = dtypeSize(dtype);
    std::string text;
    std::function<void(size_t, size_t, int)> rec = [&](size_t dim, size_t offset, int indent) {
      if (dim == shape.size()) {
        text += formatElement(dtype, bytes.data() + offset * es);
        return;
      }
      size_t inner = 1;
      for (size_t d = dim + 1; d < shape.size(); ++d)
        inner *= size_t(shape[d]);
      const bool rows = dim + 2 <= shape.size();
      text += rows ? "{\n" : "{";
      for (int64_t i = 0; i < shape[dim]; ++i) {
        if (rows)
          text += std::string(size_t(indent + 1), ' ');
        rec(dim + 1, offset + size_t(i) * inner, indent + 1);
        if (i + 1 < shape[dim])
          text += ",";
        if (rows)
          text += "\n";
      }
      if (rows)
        text += std::string(size_t(indent), ' ');
      text += "}";
    };
    // No elements: nothing to recurse over (a verified [2^38, 0] would loop 2^38 times).
    if (bytes.empty())
      text = "{}";
    else
      rec(0, 0, 0);
    report.cycles.sync += target.global_sync_cycles();
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
