#include "runtime/step_tables.h"

#include "runtime/thread_pool.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace popc::runtime {

namespace fb = ::popef::fb;
using popef::len;

namespace {

// Below these sizes a step runs on the control thread alone: waking the pool
// costs a few microseconds, more than the work itself.
// (A host core runs a few estimated IPU cycles of vertex work per nanosecond.)
constexpr uint64_t kParallelCopyBytes = 256 << 10;
constexpr uint64_t kParallelComputeCycles = 200000; // sum of vertex cycle estimates

// n bytes, K <= n <= 2K, as the first K and the last K (overlapping when
// n < 2K): fixed-size moves the compiler inlines.
template <uint32_t K> inline void copyEnds(uint8_t *dst, const uint8_t *src, uint32_t n) {
  uint8_t head[K], tail[K];
  std::memcpy(head, src, K);
  std::memcpy(tail, src + n - K, K);
  std::memcpy(dst, head, K);
  std::memcpy(dst + n - K, tail, K);
}

// Exchange lists often hold many copies of a few bytes; a libc call each
// would dominate, so short ones are done inline (ranges never overlap).
inline void copyBytes(uint8_t *dst, const uint8_t *src, uint32_t n) {
  if (n > 128)
    std::memcpy(dst, src, n);
  else if (n > 64)
    copyEnds<64>(dst, src, n);
  else if (n > 32)
    copyEnds<32>(dst, src, n);
  else if (n > 16)
    copyEnds<16>(dst, src, n);
  else if (n >= 8)
    copyEnds<8>(dst, src, n);
  else if (n >= 4)
    copyEnds<4>(dst, src, n);
  else
    for (uint32_t i = 0; i < n; ++i)
      dst[i] = src[i];
}

// Chunk boundaries over `work` (per item): a new chunk once `limit` is
// reached, only where `cut(i)` allows; the last boundary is work.size().
template <typename Cut>
std::vector<uint32_t> chunkBoundaries(const std::vector<uint64_t> &work, uint64_t limit, Cut cut) {
  std::vector<uint32_t> chunks{0};
  uint64_t acc = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    if (acc >= limit && i > 0 && cut(i)) {
      chunks.push_back(uint32_t(i));
      acc = 0;
    }
    acc += work[i];
  }
  chunks.push_back(uint32_t(work.size()));
  return chunks;
}

// A cross-replica step when replicas live in several instances: the copies,
// single and replica-relative, and PopART's host all-reduce cost.
ExchangePlan planBroadcast(const fb::Target &target, const fb::ExchangeStep &step) {
  ExchangePlan plan;
  plan.broadcastFrom = step.from_replica();
  uint64_t bytes = 0;
  for (const fb::Copy &record : popef::stepCopies(step)) {
    const fb::Copy *c = &record;
    for (uint64_t k = 0; k < popef::copyCount(*c); ++k)
      plan.broadcastCopies.push_back({c->src_tile(), uint32_t(c->src_offset() + k * c->src_stride()), c->dst_tile(),
                                      uint32_t(c->dst_offset() + k * c->dst_stride()), c->bytes()});
    bytes += popef::copyTotalBytes(*c);
  }
  plan.broadcastBuffer.resize(bytes);
  plan.cost = hostAllReduceCost(target, bytes);
  return plan;
}

} // namespace

ComputeSetPlan planComputeSet(const fb::Executable &root, uint32_t c, const ReplicaTiles &tiles,
                              std::span<const VertexFn> typeFns, size_t threads) {
  const fb::Target &target = *root.target();
  const fb::ComputeSet *cs = root.compute_sets()->Get(c);
  ComputeSetPlan plan;
  const uint32_t nv = len(cs->vertices());
  // Stored vertices (a repeated one stands for several: popef.fbs), sorted
  // by (tile, type); a repeated vertex's repetitions follow it, as in the
  // order the compiler wrote them.
  std::vector<const fb::VertexRepeat *> repeatOf(nv, nullptr);
  for (uint32_t r = 0; r < len(cs->vertex_repeats()); ++r)
    repeatOf[cs->vertex_repeats()->Get(r)->vertex()] = cs->vertex_repeats()->Get(r);
  std::vector<uint32_t> order(nv);
  std::iota(order.begin(), order.end(), 0u);
  auto key = [&](uint32_t v) {
    const fb::Vertex *x = cs->vertices()->Get(v);
    return std::pair(x->tile(), x->type());
  };
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  plan.fieldOffsets = cs->field_offsets() ? cs->field_offsets()->data() : nullptr;
  plan.fieldStrides = cs->field_strides() ? cs->field_strides()->data() : nullptr;
  // Per kind its vertex type, per run its tile (for the costs below).
  std::vector<uint32_t> kindTypes, runTile;
  auto kindOf = [&](uint32_t type, uint32_t nf) {
    auto it = std::find(kindTypes.begin(), kindTypes.end(), type);
    if (it != kindTypes.end())
      return uint32_t(it - kindTypes.begin());
    kindTypes.push_back(type);
    VertexKind kind{typeFns[type], nf, uint32_t(plan.spans.size()), 0};
    const fb::VertexType *vt = root.vertex_types()->Get(type);
    for (uint32_t f = 0; f < nf; ++f)
      if (!popef::isImmediate(*vt->fields()->Get(f)))
        plan.spans.push_back({f, std::min<uint32_t>(vt->fields()->Get(f)->bytes(), kPrefetchFieldBytes)});
    kind.spansEnd = uint32_t(plan.spans.size());
    plan.kinds.push_back(kind);
    return uint32_t(plan.kinds.size() - 1);
  };
  auto addRun = [&](const fb::Vertex &x, uint32_t strides, uint32_t count, uint32_t nf) {
    const uint32_t k = uint32_t(plan.runs.size());
    if (plan.tiles.empty() || runTile.back() != x.tile())
      plan.tiles.push_back({tiles.base(x.tile()), k, k});
    plan.tiles.back().end = k + 1;
    plan.runs.push_back({kindOf(x.type(), nf), strides, x.fields_begin(), count});
    runTile.push_back(x.tile());
  };
  for (uint32_t v : order) {
    const fb::Vertex *x = cs->vertices()->Get(v);
    const uint32_t nf = len(root.vertex_types()->Get(x->type())->fields());
    if (const fb::VertexRepeat *rep = repeatOf[v]) {
      addRun(*x, nf ? rep->strides_begin() : 0, rep->repeat() + 1, nf); // (no fields: no strides read)
      continue;
    }
    // A plain vertex joins the run before it when its field table follows that run's last.
    const VertexRun *last = plan.runs.empty() ? nullptr : &plan.runs.back();
    if (last && last->strides == VertexRun::kNotRepeated && runTile.back() == x->tile() &&
        kindTypes[last->kind] == x->type() && uint64_t(last->fields) + uint64_t(last->count) * nf == x->fields_begin())
      ++plan.runs.back().count;
    else
      addRun(*x, VertexRun::kNotRepeated, 1, nf);
  }
  plan.prefetch = tiles.memory.bytes() >= kPrefetchMinArenaBytes;
  std::vector<uint64_t> tileWork, costs;
  uint64_t work = 0;
  for (const TileWork &tw : plan.tiles) {
    costs.clear();
    for (uint32_t k = tw.begin; k < tw.end; ++k)
      costs.insert(costs.end(), plan.runs[k].count, root.vertex_types()->Get(kindTypes[plan.runs[k].kind])->cycles());
    const uint64_t tileCycles = tileComputeCycles(costs, target.workers_per_tile());
    plan.cycles = std::max(plan.cycles, tileCycles);
    const uint32_t ipu = runTile[tw.begin] / target.tiles_per_ipu();
    if (plan.ipuCycles.empty() || plan.ipuCycles.back().first != ipu)
      plan.ipuCycles.push_back({ipu, 0}); // vertices are in tile order, so IPUs come in order
    plan.ipuCycles.back().second = std::max(plan.ipuCycles.back().second, tileCycles);
    tileWork.push_back(std::accumulate(costs.begin(), costs.end(), uint64_t(0)));
    work += tileWork.back();
  }
  // Replicas run the same vertices on their own tiles, at the same time.
  const size_t oneReplica = plan.tiles.size();
  plan.tilesPerReplica = uint32_t(oneReplica);
  for (uint32_t r = 1; r < tiles.replicas; ++r)
    for (size_t i = 0; i < oneReplica; ++i) {
      const TileWork &tw = plan.tiles[i];
      const uint32_t tile = runTile[tw.begin];
      plan.tiles.push_back({tiles.base(tile, r), tw.begin, tw.end});
      tileWork.push_back(tileWork[i]);
      work += tileWork[i];
    }
  // Contiguous runs of tiles, a few per thread (few atomics, neighbouring
  // tiles together); one chunk when the step is too small to share.
  const uint64_t perChunk = work < kParallelComputeCycles ? work + 1 : work / (4 * threads) + 1;
  plan.chunks = chunkBoundaries(tileWork, perChunk, [](size_t) { return true; });
  return plan;
}

// Asks for the memory fields of the vertices of `tw` to come into the
// cache while the tile before it runs, up to kPrefetchTileBytes (into L1:
// prefetcht0 measured 5-7 % faster runs than an L2 hint). A run walks
// hundreds of MB of tiles, so a vertex's operands come from DRAM:
// a small vertex runs at 5-15 % of a core's peak cold, 2x that when its
// tile was asked for in time (popc-vertex-bench). Only the cache sees it:
// nothing is read or written that the vertices would not.
static void prefetchTile(const ComputeSetPlan &plan, const TileWork &tw) {
  int64_t left = kPrefetchTileBytes;
  plan.forEachFieldSpan(tw, [&left](const uint8_t *p, uint32_t bytes) {
    prefetchBytes(p, bytes);
    left -= bytes;
    return left > 0;
  });
}

void runComputeSet(const ComputeSetPlan &plan, ThreadPool &pool) {
  pool.parallelFor(plan.chunks.size() - 1, [&plan](size_t c) {
    for (uint32_t t = plan.chunks[c]; t < plan.chunks[c + 1]; ++t) {
      if (plan.prefetch && t + 1 < plan.chunks[c + 1])
        prefetchTile(plan, plan.tiles[t + 1]);
      uint8_t *base = plan.tiles[t].base;
      plan.forEachCall(plan.tiles[t], [base](VertexFn fn, const uint32_t *fields) { fn(base, fields); });
    }
  });
}

ExchangePlan planExchange(const fb::Executable &root, uint32_t e, const ReplicaTiles &tiles, bool chargedInRuns,
                          bool acrossInstances, size_t threads) {
  const fb::Target &target = *root.target();
  const fb::ExchangeStep *step = root.exchanges()->Get(e);
  // A cross-replica step: every replica reads replica from_replica's sources,
  // all over the links (the simulated replicas are IPUs of their own).
  const int32_t fromReplica = step->from_replica();
  if (fromReplica >= 0 && acrossInstances)
    return planBroadcast(target, *step);
  ExchangePlan plan;
  plan.cost = chargedInRuns ? exchangeCost(target, *step) : exchangeVolume(target, *step);
  const uint32_t replicas = tiles.replicas;
  if (fromReplica >= 0) {
    popef::forEachCopy(*step, [&](const fb::Copy &c) {
      for (uint32_t r = 0; r < replicas; ++r)
        for (uint64_t k = 0; k < popef::copyCount(c); ++k)
          plan.remote.push_back({tiles.tileOf(c.src_tile(), uint32_t(fromReplica)),
                                 uint32_t(c.src_offset() + k * c.src_stride()), tiles.tileOf(c.dst_tile(), r),
                                 uint32_t(c.dst_offset() + k * c.dst_stride()), c.bytes()});
    });
    return plan;
  }
  const uint32_t tilesPerIpu = target.tiles_per_ipu();
  auto crossing = [tilesPerIpu](uint32_t srcTile, uint32_t dstTile) {
    return srcTile / tilesPerIpu != dstTile / tilesPerIpu;
  };
  const bool multiIpu = target.num_ipus() > 1;
  if (multiIpu)
    popef::forEachCopy(*step, [&](const fb::Copy &c) {
      if (!crossing(c.src_tile(), c.dst_tile()))
        return;
      auto add = [&](auto &list, uint32_t ipu) {
        auto it = std::find_if(list.begin(), list.end(), [&](const auto &p) { return p.first == ipu; });
        (it == list.end() ? list.emplace_back(ipu, 0) : *it).second += popef::copyTotalBytes(c) * replicas;
      };
      add(plan.ipuSent, c.src_tile() / tilesPerIpu);
      add(plan.ipuReceived, c.dst_tile() / tilesPerIpu);
      // The link moves single copies: a strided record is expanded (verified in range).
      for (uint32_t r = 0; r < replicas; ++r)
        for (uint64_t k = 0; k < popef::copyCount(c); ++k)
          plan.remote.push_back({tiles.tileOf(c.src_tile(), r), uint32_t(c.src_offset() + k * c.src_stride()),
                                 tiles.tileOf(c.dst_tile(), r), uint32_t(c.dst_offset() + k * c.dst_stride()),
                                 c.bytes()});
    });
  const uint32_t np = popef::len(step->pieces()), nat = popef::len(step->placements());
  if (nat == 0)
    return plan;
  const fb::Piece *pieces = reinterpret_cast<const fb::Piece *>(step->pieces()->Data());
  plan.packedOrigin = tiles.base(0);
  auto sourceOf = [&](const fb::Piece &p, uint32_t r) { return tiles.base(p.src_tile(), r) + p.src_offset(); };
  // Every source and destination is then a 32-bit offset from the origin
  // (and each replica's pieces are the same records).
  const DeviceMemory &arena = tiles.memory;
  bool packed = uint64_t(arena.end() - plan.packedOrigin) <= UINT32_MAX;
  for (const fb::Piece *p = pieces; p != pieces + np && packed; ++p)
    packed = PackedPieceOp::fits(p->bytes(), uint64_t(p->repeat()) + 1, p->src_stride(), p->dst_stride());
  (packed ? plan.packedPieces.reserve(size_t(np) * replicas) : plan.pieces.reserve(size_t(np) * replicas));
  for (uint32_t r = 0; r < replicas; ++r)
    for (const fb::Piece *p = pieces; p != pieces + np; ++p) {
      if (packed)
        plan.packedPieces.push_back({uint32_t(sourceOf(*p, r) - plan.packedOrigin), uint16_t(p->bytes()),
                                     uint16_t(p->repeat() + 1), uint16_t(p->src_stride()),
                                     uint16_t(p->dst_stride())});
      else
        plan.pieces.push_back({sourceOf(*p, r), p->bytes(), p->repeat() + 1, p->src_stride(), p->dst_stride()});
    }
  // The compiler writes placements sorted by destination (popef.fbs); any other order is sorted here.
  std::vector<uint32_t> order(nat);
  std::iota(order.begin(), order.end(), 0u);
  auto key = [&](uint32_t i) {
    const fb::Placement *at = step->placements()->Get(i);
    return std::pair(at->dst_tile(), at->dst_offset());
  };
  if (!std::is_sorted(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); }))
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
  const std::vector<uint64_t> bytesBefore = popef::pieceBytesBefore(*step);
  std::vector<uint64_t> bytes;  // per local placement
  std::vector<uint32_t> dstTiles;
  (packed ? plan.packedLocal.reserve(size_t(nat) * replicas) : plan.local.reserve(size_t(nat) * replicas));
  bytes.reserve(size_t(nat) * replicas);
  dstTiles.reserve(size_t(nat) * replicas);
  auto addLocal = [&](uint32_t dstTile, uint32_t r, uint64_t dstOffset, uint32_t first, uint32_t count) {
    uint8_t *dst = tiles.base(dstTile, r) + dstOffset;
    if (packed)
      plan.packedLocal.push_back({uint32_t(dst - plan.packedOrigin), r * np + first, count});
    else
      plan.local.push_back({dst, r * np + first, count});
    bytes.push_back(bytesBefore[first + count] - bytesBefore[first]);
    dstTiles.push_back(tiles.tileOf(dstTile, r));
  };
  for (uint32_t r = 0; r < replicas; ++r)
    for (uint32_t i : order) {
      const fb::Placement *at = step->placements()->Get(i);
      if (!multiIpu) {
        addLocal(at->dst_tile(), r, at->dst_offset(), at->first_piece(), at->pieces());
        continue;
      }
      // On several IPUs a placement may mix pieces from this IPU (kept here,
      // in runs) with pieces from another (the link's, above).
      uint64_t dst = at->dst_offset(), runDst = dst;
      uint32_t runFirst = at->first_piece();
      const uint32_t end = at->first_piece() + at->pieces();
      for (uint32_t k = at->first_piece(); k < end; ++k) {
        const bool remote = crossing(pieces[k].src_tile(), at->dst_tile());
        if (remote && k > runFirst)
          addLocal(at->dst_tile(), r, runDst, runFirst, k - runFirst);
        dst += popef::pieceExtent(pieces[k]);
        if (remote)
          runFirst = k + 1, runDst = dst;
      }
      if (end > runFirst)
        addLocal(at->dst_tile(), r, runDst, runFirst, end - runFirst);
    }
  // Chunks of whole destination tiles, a few per thread, so one tile's
  // memory is written by one thread.
  const uint64_t total = std::accumulate(bytes.begin(), bytes.end(), uint64_t(0));
  const uint64_t perChunk =
      total < kParallelCopyBytes ? total + 1 : std::max<uint64_t>(16 << 10, total / (4 * threads));
  plan.chunks = chunkBoundaries(bytes, perChunk, [&](size_t i) { return dstTiles[i] != dstTiles[i - 1]; });
  return plan;
}

namespace {

// A piece's fields, read where the loop needs them: a local copy of all five
// (a struct unpacked up front) kept them in registers and spilled the loop's
// own, and the copy loop ran 14 % slower (perf samples, GoogLeNet).
inline const uint8_t *source(const PieceOp &p, const uint8_t *) { return p.src; }
inline const uint8_t *source(const PackedPieceOp &p, const uint8_t *origin) { return origin + p.srcOffset; }
inline uint8_t *destination(const PlacementOp &at, uint8_t *) { return at.dst; }
inline uint8_t *destination(const PackedPlacementOp &at, uint8_t *origin) { return origin + at.dstOffset; }

template <typename Op, typename At>
void copyPlacements(const ExchangePlan &plan, const Op *pieces, const At *ops, ThreadPool &pool) {
  const uint32_t *chunks = plan.chunks.data();
  uint8_t *origin = plan.packedOrigin;
  pool.parallelFor(plan.chunks.size() - 1, [ops, pieces, chunks, origin](size_t k) {
    for (uint32_t i = chunks[k]; i < chunks[k + 1]; ++i) {
      uint8_t *dst = destination(ops[i], origin);
      for (const Op *p = pieces + ops[i].firstPiece, *end = p + ops[i].pieces; p != end; ++p) {
        uint8_t *d = dst;
        const uint8_t *src = source(*p, origin);
        for (uint32_t n = 0; n < p->count; ++n, d += p->dstStride, src += p->srcStride)
          copyBytes(d, src, p->bytes);
        dst += uint64_t(p->count - 1) * p->dstStride + p->bytes; // the piece's extent
      }
    }
  });
}

} // namespace

void performLocalCopies(const ExchangePlan &plan, ThreadPool &pool) {
  if (!plan.packedLocal.empty())
    copyPlacements(plan, plan.packedPieces.data(), plan.packedLocal.data(), pool);
  else if (!plan.local.empty())
    copyPlacements(plan, plan.pieces.data(), plan.local.data(), pool);
}

} // namespace popc::runtime
