#include "distributed/mpi_replica_link.h"

#include "support/error.h"

namespace popc::distributed {

namespace {

class MpiReplicaLink final : public runtime::ReplicaLink {
public:
  MpiReplicaLink(MpiSession &session, uint32_t perRank) : session_(session), perRank_(perRank) {}
  uint32_t firstReplica() const override { return uint32_t(session_.rank()) * perRank_; }
  uint32_t localReplicas() const override { return perRank_; }
  uint32_t instances() const override { return uint32_t(session_.size()); }
  void broadcastFromReplica(uint32_t fromReplica, std::span<uint8_t> bytes) override {
    session_.broadcast(bytes, int(fromReplica / perRank_), "exchanging between replicas");
  }

private:
  MpiSession &session_;
  uint32_t perRank_;
};

} // namespace

std::shared_ptr<runtime::ReplicaLink> makeMpiReplicaLink(MpiSession &session, uint32_t replicationFactor,
                                                         const std::string &executable) {
  const uint32_t ranks = uint32_t(session.size());
  if (replicationFactor % ranks)
    fail("{}: {} replicas (popc-onnx --replication-factor {}) do not divide over {} MPI ranks: run mpirun -np N "
         "with N dividing {}, or compile with --replication-factor a multiple of {}",
         executable, replicationFactor, replicationFactor, ranks, replicationFactor, ranks);
  return std::make_shared<MpiReplicaLink>(session, replicationFactor / ranks);
}

} // namespace popc::distributed
