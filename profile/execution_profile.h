// The execution profile (Poplar's execution profile, docs/profile-format.md):
// the program trace the engine reported, and the simulation steps computed
// from it and the graph profile with the engine's cycle model.
#pragma once
#include "profile/graph_profile.h"
#include "runtime/program_observer.h"

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace popc::profile {

// Records the flattened id (ProgramIndex) of every program the engine runs.
class TraceRecorder : public runtime::ProgramObserver {
public:
  explicit TraceRecorder(const popef::Executable &exe) : index_(exe.root()) {}
  void onProgram(const ::popef::fb::Program &p) override { trace_.push_back(index_.id(&p)); }
  const std::vector<uint32_t> &trace() const { return trace_; }
  void clear() { trace_.clear(); }

private:
  ProgramIndex index_;
  std::vector<uint32_t> trace_;
};

// A cross-replica exchange that ran over the host link between MPI instances
// (docs/distributed.md), as the engine charged it (runtime::ExchangeReport).
struct HostAllReduce {
  uint64_t syncCycles = 0, transferCycles = 0, bytes = 0;
};

// execution.json's document for `trace` (program ids into graph["programs"]).
// `hostAllReduce`, by popef exchange index, replaces those steps' IPU-link
// costs with the host link's (step field "hostAllReduce": true, phase host).
// Throws popc::Error if the trace names a program the graph profile lacks.
Json executionProfile(const Json &graph, std::span<const uint32_t> trace,
                      const std::map<uint32_t, HostAllReduce> &hostAllReduce = {});

} // namespace popc::profile
