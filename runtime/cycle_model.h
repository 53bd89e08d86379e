// The cycle model: what a step would cost on the simulated IPU. Pure
// functions of the executable (no data dependence), so the engine computes
// them once at load.
#pragma once
#include "formats/popef/popef.h"

#include <cstdint>
#include <span>

namespace popc::runtime {

// One tile's compute time: vertices (given by their cycle estimates, in
// execution order) are handed greedily to the least-loaded of `workers`
// worker contexts; the tile finishes with its busiest worker.
uint64_t tileComputeCycles(std::span<const uint64_t> vertexCycles, uint32_t workers);

struct ExchangeCost {
  uint64_t sync = 0;      // sync_cycles, or global_sync_cycles if any copy crosses IPUs
  uint64_t transfer = 0;  // busiest tile: max(sent, received) over each link kind
  uint64_t bytes = 0;
  bool interIpu = false;
};
// Per tile: ceil(max(on-IPU bytes sent, received) / exchange_bytes_per_cycle)
// + ceil(max(cross-IPU bytes sent, received) / inter_ipu_bytes_per_cycle);
// the step takes the slowest tile.
ExchangeCost exchangeCost(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step);

struct StreamCost {
  uint64_t sync = 0;  // global_sync_cycles
  uint64_t host = 0;  // ceil(bytes / host_bytes_per_cycle)
};
StreamCost streamCopyCost(const ::popef::fb::Target &target, uint64_t bytes);

} // namespace popc::runtime
