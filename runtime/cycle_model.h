// The cycle model: what a step would cost on the simulated IPU. Pure
// functions of the executable (no data dependence), so the engine computes
// them once at load.
#pragma once
#include "formats/popef/popef.h"

#include <cstdint>
#include <span>
#include <vector>

namespace popc::runtime {

// One tile's compute time: vertices (given by their cycle estimates, in
// execution order) are handed greedily to the least-loaded of `workers`
// worker contexts; the tile finishes with its busiest worker, whose load is
// multiplied by `workers` (round-robin issue: each context gets every
// workers-th cycle).
uint64_t tileComputeCycles(std::span<const uint64_t> vertexCycles, uint32_t workers);

// One tile's traffic in an exchange step, in bytes. On the IPU the exchange
// multicasts: a source byte read by several tiles leaves its tile once, so
// `sentOn` counts distinct source bytes. Links between IPUs are point to
// point: `sentX` counts every copy.
struct TileTraffic {
  uint32_t tile = 0;
  uint64_t sentOn = 0, recvOn = 0, sentX = 0, recvX = 0;
};
// The tiles that send or receive in `step`, in tile order.
std::vector<TileTraffic> exchangeTraffic(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step);
// ceil(max(on-IPU sent, received) / exchange_bytes_per_cycle)
// + ceil(max(cross-IPU sent, received) / inter_ipu_bytes_per_cycle)
uint64_t tileExchangeCycles(const ::popef::fb::Target &target, const TileTraffic &t);

struct ExchangeCost {
  uint64_t sync = 0;      // sync_cycles, or global_sync_cycles if any copy crosses IPUs
  uint64_t transfer = 0;  // busiest tile: max(sent, received) over each link kind
  uint64_t bytes = 0;
  bool interIpu = false;
};
// The step takes its slowest tile (tileExchangeCycles).
ExchangeCost exchangeCost(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step);
// The same without `transfer` (left 0): bytes, interIpu and sync only, with no
// traffic table (for steps no run charges: the load program's).
ExchangeCost exchangeVolume(const ::popef::fb::Target &target, const ::popef::fb::ExchangeStep &step);

struct StreamCost {
  uint64_t sync = 0;  // global_sync_cycles
  uint64_t host = 0;  // ceil(bytes / host_bytes_per_cycle)
};
StreamCost streamCopyCost(const ::popef::fb::Target &target, uint64_t bytes);

// A Sync program: sync_cycles.
uint64_t syncCycles(const ::popef::fb::Target &target);
// If / RepeatWhileTrue / Switch wait for their control value: sync_cycles per read.
uint64_t controlReadCycles(const ::popef::fb::Target &target);
// PrintTensor brings the tensor to the host: global_sync_cycles.
uint64_t printTensorCycles(const ::popef::fb::Target &target);
// A cross-replica step whose replicas live in several instances (MPI ranks):
// PopART's host all-reduce, the source bytes to the host and back over the
// host link behind a global sync. Every instance charges the same.
ExchangeCost hostAllReduceCost(const ::popef::fb::Target &target, uint64_t bytes);

} // namespace popc::runtime
