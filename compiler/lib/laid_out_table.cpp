#include "compiler/lib/laid_out_table.h"

#include <xxhash.h>

#include <algorithm>

namespace popc::lib {

uint64_t LaidOutTable::hashOf(uint32_t tile, const std::vector<Run> &runs) {
  static_assert(sizeof(Run) == 16, "runs are hashed as their bytes");
  return XXH3_64bits_withSeed(runs.data(), runs.size() * sizeof(Run), tile);
}

bool LaidOutTable::matches(const Entry &e, uint32_t tile, const std::vector<Run> &runs) const {
  return e.tile == tile && e.runsCount == runs.size() &&
         std::equal(runs.begin(), runs.end(), runs_.begin() + ptrdiff_t(e.runsBegin),
                    [](const Run &a, const Run &b) { return a.byte == b.byte && a.bytes == b.bytes; });
}

std::optional<graph::FieldRef> LaidOutTable::find(uint32_t tile, const std::vector<Run> &runs) const {
  auto [first, last] = byHash_.equal_range(hashOf(tile, runs));
  for (auto it = first; it != last; ++it)
    if (matches(it->second, tile, runs))
      return it->second.field;
  return std::nullopt;
}

void LaidOutTable::add(uint32_t tile, const std::vector<Run> &runs, const graph::FieldRef &field) {
  byHash_.emplace(hashOf(tile, runs), Entry{tile, uint32_t(runs.size()), runs_.size(), field});
  runs_.insert(runs_.end(), runs.begin(), runs.end());
}

} // namespace popc::lib
