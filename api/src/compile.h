// Graph + programs → popef bytes (see compile.cpp).
#pragma once
#include "graph_impl.h"

#include <map>
#include <string>
#include <vector>

namespace popc::api::detail {

std::vector<uint8_t> compile(GraphImpl &graph, const std::vector<program::Program> &programs,
                             const std::map<std::string, std::string> &options);

} // namespace popc::api::detail
