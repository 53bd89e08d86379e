// The text of Poplar's printProfileSummary, rendered from a graph profile
// and, optionally, an execution profile (the JSON documents of
// graph_profile.h / execution_profile.h).
#pragma once
#include "profile/graph_profile.h"

#include <string>

namespace popc::profile {

struct SummaryOptions {
  bool showExecutionSteps = false; // the simulated steps (needs an execution profile)
  bool showVarStorage = false;     // liveness per program (needs compile-time liveness)
  bool colours = false;
};

std::string profileSummary(const Json &graph, const Json *execution, const SummaryOptions &options);

// 1234567 -> "1,234,567".
std::string withCommas(uint64_t v);

} // namespace popc::profile
