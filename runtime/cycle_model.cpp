#include "runtime/cycle_model.h"

#include <algorithm>
#include <tuple>
#include <unordered_map>
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

std::vector<TileTraffic> exchangeTraffic(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  struct Source {
    uint32_t tile;
    uint64_t begin, end;
    bool operator<(const Source &o) const { return std::tie(tile, begin, end) < std::tie(o.tile, o.begin, o.end); }
  };
  std::unordered_map<uint32_t, TileTraffic> tiles; // emitted sorted by tile below
  std::vector<Source> onIpu;
  auto at = [&](uint32_t tile) -> TileTraffic & {
    TileTraffic &t = tiles[tile];
    t.tile = tile;
    return t;
  };
  if (step.copies()) {
    tiles.reserve(step.copies()->size() * 2);
    onIpu.reserve(step.copies()->size());
    for (const auto *c : *step.copies()) {
      const bool cross = c->src_tile() / target.tiles_per_ipu() != c->dst_tile() / target.tiles_per_ipu();
      const uint64_t total = popef::copyTotalBytes(*c);
      if (cross) {
        at(c->src_tile()).sentX += total;
        at(c->dst_tile()).recvX += total;
      } else {
        // A strided record's sources: one range when its runs touch or repeat
        // (stride <= bytes), else each run (the gaps are not sent).
        if (c->repeat() == 0 || c->src_stride() <= c->bytes())
          onIpu.push_back({c->src_tile(), c->src_offset(), popef::copySrcEnd(*c)});
        else
          for (uint64_t i = 0, o = c->src_offset(); i <= c->repeat(); ++i, o += c->src_stride())
            onIpu.push_back({c->src_tile(), o, o + c->bytes()});
        at(c->dst_tile()).recvOn += total;
      }
    }
  }
  // Union of each tile's source ranges.
  std::sort(onIpu.begin(), onIpu.end());
  for (size_t i = 0; i < onIpu.size();) {
    TileTraffic &t = at(onIpu[i].tile);
    uint64_t begin = onIpu[i].begin, end = onIpu[i].end;
    for (++i; i < onIpu.size() && onIpu[i].tile == t.tile; ++i) {
      if (onIpu[i].begin > end) {
        t.sentOn += end - begin;
        begin = onIpu[i].begin;
      }
      end = std::max(end, onIpu[i].end);
    }
    t.sentOn += end - begin;
  }
  std::vector<TileTraffic> out;
  out.reserve(tiles.size());
  for (const auto &[tile, t] : tiles)
    out.push_back(t);
  std::sort(out.begin(), out.end(), [](const TileTraffic &a, const TileTraffic &b) { return a.tile < b.tile; });
  return out;
}

uint64_t tileExchangeCycles(const ::popef::fb::Target &target, const TileTraffic &t) {
  return ceilDiv(std::max(t.sentOn, t.recvOn), target.exchange_bytes_per_cycle()) +
         ceilDiv(std::max(t.sentX, t.recvX), target.inter_ipu_bytes_per_cycle());
}

ExchangeCost exchangeCost(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  ExchangeCost cost;
  if (step.copies())
    for (const auto *c : *step.copies()) {
      cost.interIpu |= c->src_tile() / target.tiles_per_ipu() != c->dst_tile() / target.tiles_per_ipu();
      cost.bytes += popef::copyTotalBytes(*c);
    }
  for (const TileTraffic &t : exchangeTraffic(target, step))
    cost.transfer = std::max(cost.transfer, tileExchangeCycles(target, t));
  cost.sync = cost.interIpu ? target.global_sync_cycles() : target.sync_cycles();
  return cost;
}

StreamCost streamCopyCost(const ::popef::fb::Target &target, uint64_t bytes) {
  return {target.global_sync_cycles(), ceilDiv(bytes, target.host_bytes_per_cycle())};
}

} // namespace popc::runtime
