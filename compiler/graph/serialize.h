// Resolves the device graph's symbolic addresses with the memory plan and
// writes the popef executable.
#pragma once
#include "compiler/codegen/kernels.h"
#include "compiler/graph/device_graph.h"
#include "compiler/graph/memory_plan.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace popc::graph {

struct ExecutableCode {
  std::vector<codegen::VertexTypeInfo> vertexTypes;
  std::vector<uint8_t> bitcode; // one module holding every vertex type's symbol
};

std::vector<uint8_t> serializeExecutable(const DeviceGraph &graph, const MemoryPlan &plan,
                                         const ExecutableCode &code,
                                         const std::map<std::string, std::string> &options);

} // namespace popc::graph
