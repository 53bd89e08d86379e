// What a run cost: simulated cycles (the cycle model) and host wall time,
// by phase and per compute set / exchange step. Accumulates over runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace popc::runtime {

// compute: vertex execution; exchange: on-IPU and inter-IPU data movement;
// sync: sync points (Sync programs and the sync that opens every exchange
// and host stream copy); host: host<->device transfer.
struct PhaseCycles {
  uint64_t compute = 0, exchange = 0, sync = 0, host = 0;
  uint64_t total() const { return compute + exchange + sync + host; }
};

struct PhaseSeconds {
  double compute = 0, exchange = 0, sync = 0, host = 0;
  double total() const { return compute + exchange + sync + host; }
};

struct ComputeSetReport {
  std::string name;
  uint32_t vertices = 0;
  uint32_t tiles = 0;            // tiles with at least one vertex
  uint64_t cyclesPerRun = 0;     // slowest tile
  uint64_t runs = 0;
  uint64_t cycles = 0;           // cyclesPerRun * runs
  double seconds = 0;            // host wall time
};

struct ExchangeReport {
  std::string name;
  uint32_t copies = 0;
  uint64_t bytes = 0;            // per run
  bool interIpu = false;         // any copy crosses IPUs
  bool hostLink = false;         // from another instance's replica: over the host (hostAllReduce)
  uint64_t syncCyclesPerRun = 0;
  uint64_t transferCyclesPerRun = 0;
  uint64_t runs = 0;
  uint64_t cycles = 0;
  double seconds = 0;
};

struct Report {
  std::string arch;
  uint64_t clockHz = 0;
  unsigned threads = 0;          // host threads used
  std::string hostCpu;
  double loadSeconds = 0;        // arena, constants, precomputed tables (not JIT)
  double jitSeconds = 0;         // bitcode gate + optimise + compile
  double runSeconds = 0;         // all Engine::run calls
  uint64_t runs = 0;
  uint64_t hostBytesIn = 0, hostBytesOut = 0;
  uint64_t loadExchangeBytes = 0; // constants laid out once at load (popef `load`), all replicas
  PhaseCycles cycles;
  PhaseSeconds seconds;
  std::vector<ComputeSetReport> computeSets; // index = popef compute set index
  std::vector<ExchangeReport> exchanges;     // index = popef exchange index
  uint32_t replicas = 1;                     // replicated graphs running side by side
  uint64_t interIpuBytes = 0;                // bytes moved over IPU-links (all replicas)
  // MPI instances (docs/distributed.md): this engine's replicas are
  // [firstReplica, firstReplica + replicas) of totalReplicas; cross-replica
  // steps move hostAllReduceBytes over the host link, like PopART's hostAllReduce.
  uint32_t instances = 1, firstReplica = 0, totalReplicas = 1;
  uint64_t hostAllReduceBytes = 0;
  // Per IPU of one replica: busiest-tile compute cycles summed over compute
  // set runs, and bytes sent/received over the links (all replicas).
  struct Ipu {
    uint64_t computeCycles = 0, linkBytesSent = 0, linkBytesReceived = 0;
  };
  std::vector<Ipu> ipus;
};

} // namespace popc::runtime
