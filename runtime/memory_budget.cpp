#include "runtime/memory_budget.h"

#include "runtime/device_memory.h"
#include "runtime/step_tables.h"
#include "support/error.h"

#include <algorithm>
#include <vector>

namespace popc::runtime {

namespace fb = ::popef::fb;

namespace {
using popc::popef::len;
std::string gib(uint64_t b) { return fmt::format("{:.2f} GiB", b / double(1ull << 30)); }

// What planExchange (step_tables.h) builds for a step: its stored pieces
// (once per replica) and placements, and, where the link moves single copies
// (a cross-replica step; a step on a multi-IPU target, whose crossing records
// are not told apart here without expanding them), every copy record per
// replica as an upper bound. Linear in the file but for those records, which
// are the product the check is there to catch.
uint64_t exchangeTableBytes(const fb::Target &t, const fb::ExchangeStep &step) {
  const uint64_t replicas = std::max<uint32_t>(1, t.replication_factor());
  uint64_t bytes = sizeof(ExchangePlan);
  if (step.from_replica() >= 0 || t.num_ipus() > 1)
    bytes += popef::stepRecordCount(step) * replicas * sizeof(RemoteCopy);
  if (step.from_replica() < 0)
    bytes += len(step.pieces()) * replicas * sizeof(PieceOp) + uint64_t(len(step.placements())) * sizeof(PlacementOp);
  return bytes;
}
} // namespace

MemoryEstimate estimateMemory(const popef::Executable &exe) {
  const fb::Executable &root = exe.root();
  const fb::Target &t = *root.target();
  // Verified: tiles <= kMaxTiles (2^20), so this table is at most 4 MiB.
  std::vector<uint32_t> extent(uint64_t(t.num_ipus()) * t.tiles_per_ipu(), 0);
  auto touch = [&](uint32_t tile, uint64_t end) { extent[tile] = std::max<uint32_t>(extent[tile], uint32_t(end)); };
  MemoryEstimate e;
  for (uint32_t i = 0; i < len(root.tensors()); ++i)
    popef::forEachLane(*root.tensors()->Get(i), [&](const fb::TileInterval &iv, uint64_t times) {
      touch(iv.tile(), iv.offset() + iv.bytes() * times);
    });
  for (uint32_t c = 0; c < len(root.compute_sets()); ++c) {
    const fb::ComputeSet *cs = root.compute_sets()->Get(c);
    popef::forEachStoredVertex(*cs, [&](const fb::Vertex &x, uint64_t times, const fb::VertexRepeat *r) {
      const fb::VertexType *vt = root.vertex_types()->Get(x.type());
      for (uint32_t f = 0; f < len(vt->fields()); ++f) // the last repetition's fields reach furthest
        if (!popef::isImmediate(*vt->fields()->Get(f)))
          touch(x.tile(), cs->field_offsets()->Get(x.fields_begin() + f) + vt->fields()->Get(f)->bytes() +
                              (r ? (times - 1) * cs->field_strides()->Get(r->strides_begin() + f) : 0));
    });
    e.tables += popef::vertexCount(*cs) * 16 + 16;
  }
  for (uint32_t s = 0; s < len(root.exchanges()); ++s) {
    const fb::ExchangeStep *step = root.exchanges()->Get(s);
    // Linear in pieces and placements: a hostile file's copy records (their
    // product) are counted here before any table is built from them.
    for (uint32_t k = 0; k < len(step->pieces()); ++k) {
      const fb::Piece *p = step->pieces()->Get(k);
      touch(p->src_tile(), popef::pieceSrcEnd(*p));
    }
    const std::vector<uint64_t> extentBefore = popef::pieceExtentsBefore(*step);
    for (uint32_t k = 0; k < len(step->placements()); ++k) {
      const fb::Placement *at = step->placements()->Get(k);
      touch(at->dst_tile(), at->dst_offset() + popef::placementSum(extentBefore, *at));
    }
    e.tables += exchangeTableBytes(t, *step);
  }
  for (uint32_t end : extent)
    e.tilesUsed += end != 0;
  // The engine maps and populates every tile's window: the bytes each tile
  // may use (the verifier bounds all the ranges above by them), per replica.
  const uint32_t replicas = std::max<uint32_t>(1, t.replication_factor());
  e.device = DeviceMemory::arenaBytes(popef::replicaTileMemoryBytes(root, replicas));
  if (const fb::Metadata *m = root.metadata())
    for (const auto *list : {m->inputs(), m->outputs()})
      for (uint32_t i = 0; i < len(list); ++i)
        e.host += popef::tensorBytes(*root.tensors()->Get(list->Get(i)->tensor()));
  e.schedule = exe.anonymousScheduleBytes();
  return e;
}

void checkMemoryBudget(const popef::Executable &exe, uint64_t budget) {
  if (!budget)
    return;
  MemoryEstimate e = estimateMemory(exe);
  if (e.total() > budget)
    fail("{}: running it needs about {} ({} of tile memory on {} tiles, {} of host inputs and outputs, {} of "
         "tables{}), more than --max-memory {}: raise --max-memory (or POPC_MAX_MEMORY) if the file is trusted",
         exe.label(), gib(e.total()), gib(e.device), e.tilesUsed, gib(e.host), gib(e.tables),
         e.schedule ? fmt::format(", {} of decompressed schedule", gib(e.schedule)) : std::string(), gib(budget));
}

} // namespace popc::runtime
