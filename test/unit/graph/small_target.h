// The graph tests' target: an ipu2 shrunk to a few tiles of a few KiB, so
// that mappings, plans and copies stay small enough to check by hand.
#pragma once
#include "compiler/graph/target.h"

#include <cstdint>

namespace popc::graph::test {

inline Target smallTarget(uint32_t tiles = 8, uint32_t bytes = 4096) {
  Target t = Target::forArch("ipu2");
  t.tilesPerIpu = tiles;
  t.bytesPerTile = bytes;
  return t;
}

} // namespace popc::graph::test
