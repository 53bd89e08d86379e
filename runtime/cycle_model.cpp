#include "runtime/cycle_model.h"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <vector>

namespace popc::runtime {

namespace {
uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
} // namespace

uint64_t tileComputeCycles(std::span<const uint64_t> vertexCycles, uint32_t workers) {
  std::vector<uint64_t> load(std::max(1u, workers), 0);
  for (uint64_t c : vertexCycles)
    *std::min_element(load.begin(), load.end()) += c;
  // The tile issues for its contexts round-robin, one slot each in turn, so a
  // context's W cycles of work take W * workers tile cycles even when the
  // other contexts are idle.
  return *std::max_element(load.begin(), load.end()) * load.size();
}

namespace {

// Whether every copy of `step` stays on its IPU: then its traffic and volume
// follow from the stored pieces and placements without expanding the records.
bool onIpuOnly(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  return step.from_replica() < 0 && target.num_ipus() == 1;
}

// The on-IPU source ranges of a step, each tile's union being the distinct
// bytes it sends (the exchange multicasts).
class SourceRanges {
public:
  void add(const ::popef::fb::Copy &c) {
    add(c.src_tile(), c.src_offset(), popef::copySrcEnd(c), c.bytes(), c.repeat(), c.src_stride());
  }
  void add(const ::popef::fb::Piece &p) {
    add(p.src_tile(), p.src_offset(), popef::pieceSrcEnd(p), p.bytes(), p.repeat(), p.src_stride());
  }
  void reserve(size_t n) { onIpu.reserve(n); }
  // One entry per sending tile: {tile, sentOn = its union's bytes}.
  void appendSent(uint32_t tiles, std::vector<TileTraffic> &out) {
    // A multicast sends the same pattern to many tiles: each distinct pattern
    // is expanded into its runs only once.
    std::sort(patterns.begin(), patterns.end());
    patterns.erase(std::unique(patterns.begin(), patterns.end()), patterns.end());
    for (const auto &[key, bytes, stride, repeat] : patterns)
      for (uint64_t i = 0, o = uint32_t(key); i <= repeat; ++i, o += stride)
        onIpu.emplace_back((key & ~uint64_t(UINT32_MAX)) | o, uint32_t(o + bytes));
    // The ranges are put in buckets by tile first (a counting sort) and each
    // bucket is sorted alone: much cheaper than sorting the step's ranges at once.
    std::vector<uint32_t> first(size_t(tiles) + 1, 0);
    for (const auto &[key, end] : onIpu)
      first[(key >> 32) + 1]++;
    std::partial_sum(first.begin(), first.end(), first.begin());
    std::vector<std::pair<uint32_t, uint32_t>> ranges(onIpu.size()); // (begin, end), by tile
    {
      std::vector<uint32_t> next(first.begin(), first.end() - 1);
      for (const auto &[key, end] : onIpu)
        ranges[next[key >> 32]++] = {uint32_t(key), end};
    }
    for (uint32_t tile = 0; tile < tiles; ++tile) {
      if (first[tile] == first[tile + 1])
        continue;
      const auto b = ranges.begin() + first[tile], e = ranges.begin() + first[tile + 1];
      if (!std::is_sorted(b, e))
        std::sort(b, e);
      uint64_t sent = 0, begin = b->first, end = b->second;
      for (auto r = b + 1; r != e; ++r) {
        if (r->first > end) {
          sent += end - begin;
          begin = r->first;
        }
        end = std::max<uint64_t>(end, r->second);
      }
      out.push_back({tile, sent + (end - begin), 0, 0, 0});
    }
  }

private:
  // A (strided) source: one range when its runs touch or repeat
  // (stride <= bytes), else each run (the gaps are not sent).
  void add(uint32_t tile, uint32_t offset, uint64_t end, uint32_t bytes, uint32_t repeat, uint32_t stride) {
    const uint64_t tileKey = uint64_t(tile) << 32;
    if (repeat == 0 || stride <= bytes)
      onIpu.emplace_back(tileKey | offset, uint32_t(end));
    else
      patterns.emplace_back(tileKey | offset, bytes, stride, repeat);
  }

  std::vector<std::pair<uint64_t, uint32_t>> onIpu; // (tile << 32 | begin, end)
  // Strided sources with gaps: (tile << 32 | offset, bytes, stride, repeat).
  std::vector<std::tuple<uint64_t, uint32_t, uint32_t, uint32_t>> patterns;
};

// Per-tile sums of `entries`, in tile order.
std::vector<TileTraffic> sumByTile(std::vector<TileTraffic> &entries) {
  std::sort(entries.begin(), entries.end(), [](const TileTraffic &a, const TileTraffic &b) { return a.tile < b.tile; });
  std::vector<TileTraffic> out;
  for (const TileTraffic &t : entries) {
    if (out.empty() || out.back().tile != t.tile)
      out.push_back({t.tile, 0, 0, 0, 0});
    TileTraffic &o = out.back();
    o.sentOn += t.sentOn, o.recvOn += t.recvOn, o.sentX += t.sentX, o.recvX += t.recvX;
  }
  return out;
}

// Any step, one copy record at a time.
std::vector<TileTraffic> recordTraffic(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  SourceRanges sources;
  std::vector<TileTraffic> received; // per tile run of records, merged by tile below
  sources.reserve(popef::stepRecordCount(step));
  popef::forEachCopy(step, [&](const ::popef::fb::Copy &c) {
    const bool cross = step.from_replica() >= 0 || // another replica's IPU
                       c.src_tile() / target.tiles_per_ipu() != c.dst_tile() / target.tiles_per_ipu();
    const uint64_t total = popef::copyTotalBytes(c);
    if (cross) {
      received.push_back({c.src_tile(), 0, 0, total, 0});
      received.push_back({c.dst_tile(), 0, 0, 0, total});
      return;
    }
    // Records come sorted by destination tile (popef.fbs): one entry per tile run.
    if (!received.empty() && received.back().tile == c.dst_tile() && received.back().sentOn == 0 &&
        received.back().sentX == 0 && received.back().recvX == 0)
      received.back().recvOn += total;
    else
      received.push_back({c.dst_tile(), 0, total, 0, 0});
    sources.add(c);
  });
  sources.appendSent(target.num_ipus() * target.tiles_per_ipu(), received); // verified: every tile is below
  return sumByTile(received);
}

// An on-IPU step from its stored shape: a tile receives its placements'
// bytes, and sends the union of the sources of the pieces in use (a piece
// several placements share reads the same bytes for each).
std::vector<TileTraffic> placementTraffic(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  const std::vector<uint64_t> bytesBefore = popef::pieceBytesBefore(step);
  std::vector<TileTraffic> entries;
  entries.reserve(popef::len(step.placements()));
  for (uint32_t i = 0; i < popef::len(step.placements()); ++i) {
    const ::popef::fb::Placement *at = step.placements()->Get(i);
    const uint64_t bytes = popef::placementSum(bytesBefore, *at);
    if (!entries.empty() && entries.back().tile == at->dst_tile() && entries.back().sentOn == 0)
      entries.back().recvOn += bytes;
    else
      entries.push_back({at->dst_tile(), 0, bytes, 0, 0});
  }
  SourceRanges sources;
  const std::vector<bool> used = popef::piecesInUse(step);
  sources.reserve(popef::len(step.pieces()));
  for (uint32_t k = 0; k < popef::len(step.pieces()); ++k)
    if (used[k])
      sources.add(*step.pieces()->Get(k));
  sources.appendSent(target.num_ipus() * target.tiles_per_ipu(), entries);
  return sumByTile(entries);
}

} // namespace

std::vector<TileTraffic> exchangeTraffic(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  return onIpuOnly(target, step) ? placementTraffic(target, step) : recordTraffic(target, step);
}

uint64_t tileExchangeCycles(const ::popef::fb::Target &target, const TileTraffic &t) {
  return ceilDiv(std::max(t.sentOn, t.recvOn), target.exchange_bytes_per_cycle()) +
         ceilDiv(std::max(t.sentX, t.recvX), target.inter_ipu_bytes_per_cycle());
}

ExchangeCost exchangeVolume(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  ExchangeCost cost;
  cost.sync = target.sync_cycles();
  if (onIpuOnly(target, step)) {
    const std::vector<uint64_t> bytesBefore = popef::pieceBytesBefore(step);
    for (uint32_t i = 0; i < popef::len(step.placements()); ++i)
      cost.bytes += popef::placementSum(bytesBefore, *step.placements()->Get(i));
    return cost;
  }
  popef::forEachCopy(step, [&](const ::popef::fb::Copy &c) {
    cost.interIpu |= step.from_replica() >= 0 || c.src_tile() / target.tiles_per_ipu() != c.dst_tile() / target.tiles_per_ipu();
    cost.bytes += popef::copyTotalBytes(c);
  });
  cost.sync = cost.interIpu ? target.global_sync_cycles() : target.sync_cycles();
  return cost;
}

ExchangeCost exchangeCost(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  // The traffic table holds the volume too: every copy is received once, on
  // the IPU (recvOn) or over a link (recvX), and copies are never empty
  // (verified), so a link carries bytes exactly when some copy crosses.
  ExchangeCost cost;
  for (const TileTraffic &t : exchangeTraffic(target, step)) {
    cost.transfer = std::max(cost.transfer, tileExchangeCycles(target, t));
    cost.bytes += t.recvOn + t.recvX;
    cost.interIpu |= t.recvX > 0;
  }
  cost.sync = cost.interIpu ? target.global_sync_cycles() : target.sync_cycles();
  return cost;
}

StreamCost streamCopyCost(const ::popef::fb::Target &target, uint64_t bytes) {
  return {target.global_sync_cycles(), ceilDiv(bytes, target.host_bytes_per_cycle())};
}

uint64_t syncCycles(const ::popef::fb::Target &target) { return target.sync_cycles(); }

uint64_t controlReadCycles(const ::popef::fb::Target &target) { return target.sync_cycles(); }

uint64_t printTensorCycles(const ::popef::fb::Target &target) { return target.global_sync_cycles(); }

ExchangeCost hostAllReduceCost(const ::popef::fb::Target &target, uint64_t bytes) {
  ExchangeCost cost;
  cost.bytes = bytes;
  cost.interIpu = true;
  cost.sync = target.global_sync_cycles();
  cost.transfer = 2 * streamCopyCost(target, bytes).host;
  return cost;
}

} // namespace popc::runtime
