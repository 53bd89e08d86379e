// The seam for replicas that live in other processes (MPI instances,
// docs/distributed.md). An engine given a ReplicaLink holds only replicas
// [firstReplica, firstReplica + localReplicas) of the executable's
// replication factor R; the others run in other instances of the same
// executable, in lockstep. The only data that crosses instances during a
// run is a cross-replica exchange step (popef ExchangeStep.from_replica,
// e.g. a gradient all-reduce): the instance holding the source replica
// broadcasts the step's source bytes to every instance.
#pragma once
#include <cstdint>
#include <span>

namespace popc::runtime {

class ReplicaLink {
public:
  virtual ~ReplicaLink() = default;
  virtual uint32_t firstReplica() const = 0;
  virtual uint32_t localReplicas() const = 0;
  virtual uint32_t instances() const = 0;
  // Collective: every instance calls it for the same step, in the same order.
  // The instance holding replica `fromReplica` has filled `bytes`; on return
  // every instance's `bytes` holds them. Throws popc::Error (a dead peer, a
  // timeout) or runtime::Stopped (the engine's stop flag).
  virtual void broadcastFromReplica(uint32_t fromReplica, std::span<uint8_t> bytes) = 0;
};

} // namespace popc::runtime
