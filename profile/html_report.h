// popc-report: one self-contained HTML page (inline CSS, JS and SVG; no
// network) rendering a graph profile and, optionally, an execution profile.
#pragma once
#include "profile/graph_profile.h"

#include <string>

namespace popc::profile {

std::string htmlReport(const Json &graph, const Json *execution, const std::string &title);

} // namespace popc::profile
