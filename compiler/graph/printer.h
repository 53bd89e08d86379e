// A stable, compact text of a lowered device graph (docs/ir-text.md, "Lowered
// graphs"): tensors with their tiles, compute sets with their vertex types and
// tiles, exchange steps with their copies, and the program trees. What
// `popc-opt --lower` prints, so lowerings and plans are checked as text
// (FileCheck) without a JIT or a run.
#pragma once
#include "compiler/graph/device_graph.h"

#include <string>
#include <vector>

namespace popc::graph {

// `vertexTypeNames[i]` names vertex type i (codegen::VertexCodegen's order).
std::string printDeviceGraph(const DeviceGraph &graph, const std::vector<std::string> &vertexTypeNames);

} // namespace popc::graph
