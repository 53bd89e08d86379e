// Graph + programs → popef bytes (see compile.cpp).
#pragma once
#include "graph_impl.h"

#include <map>
#include <string>
#include <vector>

namespace popc::api::detail {

// The popef of `programs`; `tensorIndex`, if given, receives each graph
// tensor's index in it (runtime::Engine::readTensor/writeTensor take those).
std::vector<uint8_t> compile(GraphImpl &graph, const std::vector<program::Program> &programs,
                             const std::map<std::string, std::string> &options,
                             std::vector<uint32_t> *tensorIndex = nullptr);

} // namespace popc::api::detail
