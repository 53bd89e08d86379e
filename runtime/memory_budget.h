// What a run of a verified executable will hold in memory, from the sizes the
// file declares, so poprun-lite (--max-memory) can refuse it before the Engine
// allocates anything.
#pragma once
#include "formats/popef/popef.h"

#include <cstdint>
#include <string>

namespace popc::runtime {

struct MemoryEstimate {
  uint64_t device = 0; // the tile arena the engine maps: each tile's window (DeviceMemory::arenaBytes)
  uint64_t host = 0;   // model input and output buffers of one run
  uint64_t tables = 0; // the Engine's compute-set and exchange tables
  uint64_t schedule = 0; // a compressed file's schedule, decompressed in memory (not from the cache)
  uint64_t tilesUsed = 0; // tiles some tensor, field or copy names
  uint64_t total() const { return device + host + tables + schedule; }
};

MemoryEstimate estimateMemory(const popef::Executable &exe);

// Throws popc::Error naming the file, the estimate by part and the fix when the
// estimate exceeds `budget` bytes (0 = no limit).
void checkMemoryBudget(const popef::Executable &exe, uint64_t budget);

} // namespace popc::runtime
