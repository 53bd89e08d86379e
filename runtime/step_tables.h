// The flat tables a run executes, built once at load from the verified
// executable (on every host thread: each step's table is independent):
// per compute set the vertex calls grouped by tile, per exchange step the
// resolved copies grouped by destination tile, each cut into chunks of
// similar work for the host threads; and the step's cost from cycle_model.
#pragma once
#include "formats/popef/popef.h"
#include "runtime/cycle_model.h"
#include "runtime/device_memory.h"
#include "runtime/ipu_link.h"
#include "runtime/jit.h"

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace popc::runtime {

class ThreadPool;

// The arena as replicas see it: replica r's copy of tile t is tile
// t + r * tilesPerReplica (docs/multi-ipu.md).
struct ReplicaTiles {
  const DeviceMemory &memory;
  uint32_t replicas = 1;
  uint32_t tilesPerReplica = 0;
  uint32_t tileOf(uint32_t tile, uint32_t r) const { return tile + r * tilesPerReplica; }
  uint8_t *base(uint32_t tile, uint32_t r = 0) const { return memory.tile(tileOf(tile, r)); }
};

// A vertex type as a compute set's runs call it; its memory fields are
// ComputeSetPlan::spans[spansBegin, spansEnd).
struct VertexKind {
  VertexFn fn;
  uint32_t fields;
  uint32_t spansBegin = 0, spansEnd = 0;
};
// A memory field of a vertex type: its index in the field table and how
// many of its bytes the run asks the cache for ahead of the call.
struct FieldSpan {
  uint32_t field, bytes;
};
// Vertices of one type on one tile, run one after the other, their field
// tables in the file's field_offsets: `count` calls whose tables follow
// each other from index `fields` on, or a repeated vertex (popef.fbs
// VertexRepeat): call i with field f at field_offsets[fields + f] +
// i * field_strides[strides + f], computed as it runs, so that no call needs
// a table of its own in the plan. 16 bytes: ResNet-50 has 0.24 M runs for
// its 0.65 M vertex calls.
struct VertexRun {
  uint32_t kind;    // in ComputeSetPlan::kinds
  uint32_t strides; // a repeated vertex's first stride, or kNotRepeated
  uint32_t fields, count;
  static constexpr uint32_t kNotRepeated = UINT32_MAX;
};
struct TileWork {
  uint8_t *base;
  uint32_t begin, end; // range in ComputeSetPlan::runs
};
struct ComputeSetPlan {
  std::vector<VertexKind> kinds;           // the types the compute set runs
  std::vector<FieldSpan> spans;            // their memory fields
  std::vector<VertexRun> runs;             // grouped by tile, one type after another
  const uint32_t *fieldOffsets = nullptr;  // the file's field_offsets (none when no vertex has fields)
  const uint32_t *fieldStrides = nullptr;  // and field_strides
  std::vector<TileWork> tiles;             // every replica's tiles
  std::vector<uint32_t> chunks;  // chunk k = tiles[chunks[k], chunks[k+1]), similar work each
  uint64_t cycles = 0;           // the busiest tile (tileComputeCycles)
  bool prefetch = false;         // the arena outgrows the caches: ask for each tile's operands ahead
  uint32_t tilesPerReplica = 0;
  std::vector<std::pair<uint32_t, uint64_t>> ipuCycles; // (IPU, its busiest tile) for the report

  // f(fn, fieldOffsets) for each vertex of tile work `tw`, in order.
  template <typename F> void forEachCall(const TileWork &tw, F &&f) const {
    forEachKindCall(tw, [&f](const VertexKind &kind, const uint32_t *fields) { f(kind.fn, fields); });
  }
  // f(kind, fieldOffsets) for each vertex of tile work `tw`, in order.
  template <typename F> void forEachKindCall(const TileWork &tw, F &&f) const {
    for (const VertexRun *run = runs.data() + tw.begin, *end = runs.data() + tw.end; run != end; ++run) {
      // Locals, not loads through `run` after every (opaque) call.
      const VertexKind kind = kinds[run->kind];
      const uint32_t nf = kind.fields, count = run->count;
      const uint32_t *first = fieldOffsets ? fieldOffsets + run->fields : nullptr;
      if (run->strides == VertexRun::kNotRepeated) {
        for (uint32_t k = 0; k != count; ++k)
          f(kind, first + size_t(k) * nf);
        continue;
      }
      uint32_t small[kRunFieldsOnStack];
      std::vector<uint32_t> large(nf > kRunFieldsOnStack ? nf : 0);
      uint32_t *fields = nf > kRunFieldsOnStack ? large.data() : small;
      const uint32_t *strides = fieldStrides + run->strides;
      for (uint32_t i = 0; i < nf; ++i)
        fields[i] = first[i];
      for (uint32_t n = 0; n < count; ++n) {
        f(kind, const_cast<const uint32_t *>(fields));
        for (uint32_t i = 0; i < nf; ++i)
          fields[i] += strides[i]; // the file's offset + n * stride, modulo 2^32
      }
    }
  }
  static constexpr uint32_t kRunFieldsOnStack = 64;

  // f(address, bytes) for the memory fields of tile work `tw`'s calls, in
  // order, while f returns true: what runComputeSet asks the cache for ahead
  // of the tile. Offsets as forEachKindCall computes them, without stepping
  // every field of a repeated vertex.
  template <typename F> void forEachFieldSpan(const TileWork &tw, F &&f) const {
    for (const VertexRun *run = runs.data() + tw.begin, *end = runs.data() + tw.end; run != end; ++run) {
      const VertexKind &kind = kinds[run->kind];
      if (kind.spansBegin == kind.spansEnd)
        continue; // no memory fields (and perhaps no field table at all)
      const uint32_t *first = fieldOffsets + run->fields;
      const bool repeated = run->strides != VertexRun::kNotRepeated;
      for (uint32_t n = 0; n < run->count; ++n)
        for (const FieldSpan *s = spans.data() + kind.spansBegin, *e = spans.data() + kind.spansEnd; s != e; ++s) {
          const uint32_t offset = repeated ? first[s->field] + n * fieldStrides[run->strides + s->field] // mod 2^32
                                           : first[size_t(n) * kind.fields + s->field];
          if (!f(static_cast<const uint8_t *>(tw.base + offset), s->bytes))
            return;
        }
    }
  }
};

// What a run asks the cache for ahead of a tile's vertices (step_tables.cpp):
// each memory field's first bytes, until the tile's budget is spent
// (GoogLeNet: 24 % faster runs, ResNet-50 18 %; budgets of 64 and 128 KiB
// alike, 16 KiB half the gain: docs/performance.md, nineteenth round). Only when
// the arena outgrows a last-level cache (32 MiB on a Zen CCD): operands
// that come from L3 gain nothing, and the prefetches cost their issue
// slots (the Transformer layer, in cache: 22 % slower with them).
constexpr uint32_t kPrefetchFieldBytes = 16 << 10;
constexpr int64_t kPrefetchTileBytes = 64 << 10;
constexpr uint64_t kPrefetchMinArenaBytes = 32 << 20;
// Asks the cache for the `bytes` bytes from p, line by line (into L1).
inline void prefetchBytes(const uint8_t *p, uint32_t bytes) {
  for (uint32_t b = 0; b < bytes; b += 64)
    __builtin_prefetch(p + b, 0, 3);
}

// Compute set `c` of `root`; typeFns[i] runs vertex type i.
ComputeSetPlan planComputeSet(const ::popef::fb::Executable &root, uint32_t c, const ReplicaTiles &tiles,
                              std::span<const VertexFn> typeFns, size_t threads);
// Runs every vertex of the plan, tiles shared out over the pool's threads.
void runComputeSet(const ComputeSetPlan &plan, ThreadPool &pool);

// A stored piece of an exchange step (popef.fbs) with its source resolved
// on one replica's tile: `count` copies of `bytes`, strided at both ends.
struct PieceOp {
  const uint8_t *src;
  uint32_t bytes;
  uint32_t count;
  uint32_t srcStride, dstStride;
};
// The same in 12 bytes, as a step's pieces are held when they all fit (an
// arena of less than 4 GiB: one IPU of 1,472 tiles; fewer than
// 64 Ki copies of less than 64 KiB, strided by less than 64 KiB): every
// step of the bench models. ResNet-50 holds 1.4 M pieces. Plain loads, no
// bit fields: the copy loop reads one per piece.
struct PackedPieceOp {
  uint32_t srcOffset; // from ExchangePlan::packedOrigin
  uint16_t bytes, count, srcStride, dstStride;
  static bool fits(uint64_t bytes, uint64_t count, uint64_t srcStride, uint64_t dstStride) {
    return bytes <= UINT16_MAX && count <= UINT16_MAX && srcStride <= UINT16_MAX && dstStride <= UINT16_MAX;
  }
};
static_assert(sizeof(PackedPieceOp) == 12);
// Pieces laid one after the other from `dst` on (a stored placement, or the
// on-IPU part of one), each starting where the previous one's extent ends.
struct PlacementOp {
  uint8_t *dst;
  uint32_t firstPiece, pieces; // in ExchangePlan::pieces
};
// The same in 12 bytes, beside packed pieces: the destination from
// ExchangePlan::packedOrigin.
struct PackedPlacementOp {
  uint32_t dstOffset;
  uint32_t firstPiece, pieces; // in ExchangePlan::packedPieces
};
struct ExchangePlan {
  // The on-IPU copies as the file stores them, so the table grows with the
  // file, not with the copies: the step's pieces (once per replica) and the
  // placements that lay them, sorted by destination.
  std::vector<PieceOp> pieces;
  std::vector<PlacementOp> local;
  // Or, when they all fit, both packed (the arena's first tile as origin).
  std::vector<PackedPieceOp> packedPieces;
  std::vector<PackedPlacementOp> packedLocal;
  uint8_t *packedOrigin = nullptr;
  std::vector<uint32_t> chunks;   // chunk k = placements [chunks[k], chunks[k+1]); whole dst tiles
  std::vector<RemoteCopy> remote; // cross-IPU, via IpuLink
  // A cross-replica step whose source replica may be in another instance
  // (ReplicaLink): the source bytes, packed in `broadcastCopies` order, are
  // broadcast from the instance holding replica `broadcastFrom`, then copied
  // into every local replica. Tiles in `broadcastCopies` are replica-relative.
  int32_t broadcastFrom = -1;
  std::vector<RemoteCopy> broadcastCopies;
  std::vector<uint8_t> broadcastBuffer;
  std::vector<std::pair<uint32_t, uint64_t>> ipuSent, ipuReceived; // per IPU, for the report
  ExchangeCost cost;
};

// Exchange step `e`. `chargedInRuns`: main or a function runs it (else only the
// load program does, and no traffic table is built). `acrossInstances`: some
// replicas live in other processes, so a cross-replica step is a broadcast.
ExchangePlan planExchange(const ::popef::fb::Executable &root, uint32_t e, const ReplicaTiles &tiles,
                          bool chargedInRuns, bool acrossInstances, size_t threads);
// The plan's on-IPU copies, whole destination tiles per thread.
void performLocalCopies(const ExchangePlan &plan, ThreadPool &pool);

} // namespace popc::runtime
