// Shared pieces of the work planners (matmul, conv, pooling): enumerate the
// distinct ways to split a dimension and compare plans by estimated cycles.
#pragma once
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/graph/target.h"

#include <algorithm>
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
inline uint64_t dotCycles(uint64_t dots, uint64_t k) { return dots * codegen::cycles::dotProduct(k); }

// Tile cycles while its busiest worker runs `perWorker` cycles: the tile issues
// for its workers round-robin, as the runtime's cycle model counts it.
inline uint64_t tileCycles(const graph::Target &t, uint64_t perWorker) { return perWorker * t.workersPerTile; }

// Plans whose estimated cycles are within this fraction of the best are told
// apart by the bytes the exchange moves per run (DESIGN.md, "Simulating fast"):
// on the IPU a multicast makes replicated operands nearly free, but the
// simulating host copies every replica, so of two plans of about the same
// cycles the one that replicates less runs much faster on the host. Measured
// on ResNet-50 (docs/cycle-model.md): 3 % costs 0.7 % more cycles and saves
// 12 % of host time per inference; 12.5 % would cost 15 % more cycles.
constexpr uint64_t kSimilarCostDivisor = 32; // within 1/32 = 3 %

// Picks among feasible plans: the lowest cost, or, among plans within
// 1/kSimilarCostDivisor of it, the fewest bytes moved (then the lower cost).
template <typename Plan> struct PlanChooser {
  struct Candidate {
    Plan plan;
    uint64_t cost, bytesMoved;
  };
  std::vector<Candidate> feasible;
  void add(const Plan &plan, uint64_t cost, uint64_t bytesMoved) { feasible.push_back({plan, cost, bytesMoved}); }
  bool empty() const { return feasible.empty(); }
  Plan best() const {
    uint64_t lowest = UINT64_MAX;
    for (const Candidate &c : feasible)
      lowest = std::min(lowest, c.cost);
    const uint64_t limit = lowest + lowest / kSimilarCostDivisor;
    const Candidate *pick = nullptr;
    for (const Candidate &c : feasible)
      if (c.cost <= limit && (!pick || c.bytesMoved < pick->bytesMoved ||
                              (c.bytesMoved == pick->bytesMoved && c.cost < pick->cost)))
        pick = &c;
    return pick->plan;
  }
};

} // namespace popc::lib
