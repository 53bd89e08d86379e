#pragma once
#include "compiler/ir/ir.h"

#include <string>

namespace popc::ir {
// Human-readable, deterministic text of the IR (one line per tensor and op).
std::string printIr(const Ir &ir);
std::string printGraph(const Graph &graph);
// Graphviz DOT of a graph: ops as boxes, tensors as edges labelled with shapes.
std::string graphToDot(const Graph &graph);
} // namespace popc::ir
