// runtime::ReplicaLink over MPI: rank r of N holds replicas [r*R/N, (r+1)*R/N)
// of the executable's R; a cross-replica exchange step is an MPI broadcast
// from the rank holding its source replica.
#pragma once
#include "distributed/mpi_session.h"
#include "runtime/replica_link.h"

#include <memory>

namespace popc::distributed {

// Throws popc::Error, naming the fix, when R does not divide by the ranks.
std::shared_ptr<runtime::ReplicaLink> makeMpiReplicaLink(MpiSession &session, uint32_t replicationFactor,
                                                         const std::string &executable);

} // namespace popc::distributed
