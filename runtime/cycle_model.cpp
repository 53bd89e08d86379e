#include "runtime/cycle_model.h"

#include <algorithm>
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
  return *std::max_element(load.begin(), load.end());
}

ExchangeCost exchangeCost(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step) {
  struct Traffic {
    uint64_t sentOn = 0, recvOn = 0, sentX = 0, recvX = 0;
  };
  ExchangeCost cost;
  std::unordered_map<uint32_t, Traffic> tiles; // only max() is taken: order does not matter
  if (step.copies()) {
    tiles.reserve(step.copies()->size() * 2);
    for (const auto *c : *step.copies()) {
      bool cross = c->src_tile() / target.tiles_per_ipu() != c->dst_tile() / target.tiles_per_ipu();
      cost.interIpu |= cross;
      cost.bytes += c->bytes();
      (cross ? tiles[c->src_tile()].sentX : tiles[c->src_tile()].sentOn) += c->bytes();
      (cross ? tiles[c->dst_tile()].recvX : tiles[c->dst_tile()].recvOn) += c->bytes();
    }
  }
  for (const auto &[tile, t] : tiles)
    cost.transfer = std::max(cost.transfer,
                             ceilDiv(std::max(t.sentOn, t.recvOn), target.exchange_bytes_per_cycle()) +
                                 ceilDiv(std::max(t.sentX, t.recvX), target.inter_ipu_bytes_per_cycle()));
  cost.sync = cost.interIpu ? target.global_sync_cycles() : target.sync_cycles();
  return cost;
}

StreamCost streamCopyCost(const ::popef::fb::Target &target, uint64_t bytes) {
  return {target.global_sync_cycles(), ceilDiv(bytes, target.host_bytes_per_cycle())};
}

} // namespace popc::runtime
