// Host data of a run spread over MPI instances: rank 0 reads the inputs and
// writes the outputs; every rank gets and returns only its replicas' chunks
// of each host array (runtime::replicaChunks). Variables (weights, optimizer
// state) start from rank 0's values.
#pragma once
#include "distributed/mpi_session.h"
#include "runtime/engine.h"

namespace popc::distributed {

// One Engine::run across the instances. `inputs` is read on rank 0 only
// (checked there with Engine::checkInputs before the call); the result holds
// every output on rank 0 and only this rank's chunks elsewhere.
runtime::HostTensorMap runOnInstances(MpiSession &session, runtime::Engine &engine,
                                      const runtime::HostTensorMap &inputs);

// Every rank's variables become rank 0's (after rank 0's --load-weights).
void broadcastVariables(MpiSession &session, runtime::Engine &engine);

} // namespace popc::distributed
