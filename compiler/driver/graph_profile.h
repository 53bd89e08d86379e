// Compile-time facts for the graph profile that the popef cannot carry:
// tensor liveness per program step, from the memory plan.
#pragma once
#include "compiler/graph/device_graph.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/ir/ir.h"

#include <nlohmann/json.hpp>

namespace popc::driver {

// Filled by compileOnnx when requested (popc-onnx --profile-dir).
struct ProfileFacts {
  nlohmann::ordered_json liveness; // graph.json memory.liveness (docs/profile-format.md)
  nlohmann::ordered_json ir;       // graph.json ir: the IR after the passes (ops in schedule order)
};

// The main graph of the IR as {inputs, outputs, ops: [{name, type, inputs, outputs}]}.
nlohmann::ordered_json irJson(const ir::Graph &g);

// Liveness per program step of `main`. Steps carry the flattened program id
// (pre-order over main, as profile::ProgramIndex numbers the popef).
nlohmann::ordered_json livenessJson(const graph::DeviceGraph &g, const graph::MemoryPlan &plan);

} // namespace popc::driver
