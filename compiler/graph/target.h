// The simulated IPU target the compiler plans for (DESIGN.md "The simulated target").
#pragma once
#include <cstdint>
#include <string>

namespace popc::graph {

struct Target {
  std::string arch = "ipu2";
  uint32_t numIpus = 1;
  uint32_t tilesPerIpu = 1472;
  uint32_t bytesPerTile = 624 * 1024;
  uint32_t workersPerTile = 6;
  uint64_t clockHz = 1'330'000'000;
  uint32_t exchangeBytesPerCycle = 4;   // per tile, on-IPU exchange
  uint32_t interIpuBytesPerCycle = 1;   // IPU-links, per tile pair
  uint32_t hostBytesPerCycle = 8;       // PCIe
  uint32_t syncCycles = 15;             // on-IPU sync (tutorial-scale constant)
  uint32_t globalSyncCycles = 150;      // sync across IPUs / with the host

  uint32_t numTiles() const { return numIpus * tilesPerIpu; }
  uint32_t firstTileOfIpu(uint32_t ipu) const { return ipu * tilesPerIpu; }

  // "ipu1" (GC2: 1216 tiles, 256 KiB, 1.6 GHz) or "ipu2" (GC200: 1472 tiles,
  // 624 KiB, 1.33 GHz). Throws popc::Error for anything else.
  static Target forArch(const std::string &arch, uint32_t numIpus = 1);
};

} // namespace popc::graph
