// Shared pieces of the work planners (matmul, conv, pooling): enumerate the
// distinct ways to split a dimension and compare plans by estimated cycles.
#pragma once
#include "compiler/graph/target.h"

#include <cstdint>
#include <vector>

namespace popc::lib {

// Distinct block sizes ceil(n / p) for p = 1..min(n, maxParts), largest first.
std::vector<uint64_t> blockSizeCandidates(uint64_t n, uint64_t maxParts);

inline uint64_t ceilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Cycles to move `bytes` into one tile over the on-IPU exchange.
inline uint64_t exchangeCycles(const graph::Target &t, uint64_t bytes) {
  return ceilDiv(bytes, t.exchangeBytesPerCycle);
}

// Smallest useful work per tile, in multiply-accumulates: below it the vertex
// call and exchange overheads (on the IPU and on the simulating host) dominate,
// so planners prefer fewer, fuller tiles.
constexpr uint64_t kMinMacsPerTile = 4096;

// Cycles of `dots` dot products of length `k` on one worker (2 f32 MACs per
// cycle plus loop overhead, as in the Graphcore tutorials' cost model).
inline uint64_t dotCycles(uint64_t dots, uint64_t k) { return dots * (5 + (k + 1) / 2); }

// Tile cycles while its busiest worker runs `perWorker` cycles: the tile issues
// for its workers round-robin, as the runtime's cycle model counts it.
inline uint64_t tileCycles(const graph::Target &t, uint64_t perWorker) { return perWorker * t.workersPerTile; }

} // namespace popc::lib
