// Resolves the device graph's symbolic addresses with the memory plan and
// writes the popef executable.
#pragma once
#include "compiler/codegen/kernels.h"
#include "compiler/graph/device_graph.h"
#include "compiler/graph/memory_plan.h"

#include <cstdint>
#include <future>
#include <map>
#include <string>
#include <vector>

namespace popc::graph {

struct ExecutableCode {
  std::vector<codegen::VertexTypeInfo> vertexTypes;
  std::vector<uint8_t> bitcode; // one module holding every vertex type's symbol
  // Or the same bytes still being generated on another thread: the compiler
  // optimises the module while the schedule is being written, and
  // serializeExecutable waits for them only when it packs the file.
  std::shared_future<std::vector<uint8_t>> pendingBitcode;
};

// What the executable will move per run of its main program (after copies
// are split at tile boundaries and coalesced).
struct ExchangeStats {
  uint64_t copies = 0, bytes = 0;         // exchange steps of main (each counted once)
  uint64_t loadCopies = 0, loadBytes = 0; // the load program's (constants laid out once)
};

// `tensorIndex`, if given, receives each graph tensor's index among the
// executable's tensors (per-tile temporaries share one entry per op and
// operand, so indices are not the graph's TensorIds).
std::vector<uint8_t> serializeExecutable(const DeviceGraph &graph, const MemoryPlan &plan,
                                         const ExecutableCode &code,
                                         const std::map<std::string, std::string> &options,
                                         ExchangeStats *stats = nullptr, std::vector<uint32_t> *tensorIndex = nullptr);
// The same bytes; the graph's exchange copies are released as each step is
// resolved (the rest of the graph stays), so they do not add to the peak
// beside the file being packed (popc-onnx: a quarter of ResNet-50's peak).
std::vector<uint8_t> serializeExecutable(DeviceGraph &&graph, const MemoryPlan &plan, const ExecutableCode &code,
                                         const std::map<std::string, std::string> &options,
                                         ExchangeStats *stats = nullptr, std::vector<uint32_t> *tensorIndex = nullptr);

} // namespace popc::graph
