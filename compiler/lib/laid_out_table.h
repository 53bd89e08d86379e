// The laid-out copies of one constant already made, by (tile, runs): ops
// reading the same weights in the same layout (an unrolled RNN) share one
// copy. A CNN makes hundreds of thousands of layouts and shares none, so the
// table is per source tensor (each lookup stays in cache) and keys hold no
// memory of their own (their runs are spans of one vector): lookups, inserts
// and the table's end cost a fraction of a map keyed by owned run lists.
#pragma once
#include "compiler/graph/device_graph.h"
#include "compiler/lib/runs.h"

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

namespace popc::lib {

class LaidOutTable {
public:
  std::optional<graph::FieldRef> find(uint32_t tile, const std::vector<Run> &runs) const;
  void add(uint32_t tile, const std::vector<Run> &runs, const graph::FieldRef &field);

private:
  struct Entry {
    uint32_t tile;
    uint32_t runsCount;
    uint64_t runsBegin; // in runs_
    graph::FieldRef field;
  };
  static uint64_t hashOf(uint32_t tile, const std::vector<Run> &runs);
  bool matches(const Entry &e, uint32_t tile, const std::vector<Run> &runs) const;

  std::vector<Run> runs_;
  std::unordered_multimap<uint64_t, Entry> byHash_;
};

} // namespace popc::lib
