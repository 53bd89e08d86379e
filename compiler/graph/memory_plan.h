// Per-tile memory planning with liveness (DESIGN.md invariant 2). Every
// (tensor, tile) block gets a byte offset in that tile's memory; blocks whose
// live ranges do not overlap may share bytes. A tile over budget is an error
// with Poplar-style out-of-memory report.
#pragma once
#include "compiler/graph/device_graph.h"

#include <cstdint>
#include <vector>

namespace popc::graph {

class MemoryPlan {
public:
  // Offset of tensor's block on `tile`.
  uint32_t base(TensorId tensor, uint32_t tile) const;
  // Offset in tile memory of tensor byte `byte`: (tile, offset).
  std::pair<uint32_t, uint32_t> address(const DeviceGraph &g, TensorId tensor, uint64_t byte) const;

  std::vector<uint64_t> tileBytesUsed; // peak bytes per tile
  // bases[t] = (tile, offset) pairs sorted by tile
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> bases;
  // Liveness the plan used (profiles report it): per tensor, the first and
  // last program step it is live at; steps number the leaf programs of main
  // in execution order (a Repeat body once, a Call one step).
  std::vector<std::pair<uint32_t, uint32_t>> liveSteps;
  uint32_t numSteps = 0;
};

// Throws popc::Error with the out-of-memory report if a tile exceeds
// target.bytesPerTile.
MemoryPlan planMemory(const DeviceGraph &graph);

} // namespace popc::graph
