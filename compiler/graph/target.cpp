#include "compiler/graph/target.h"

#include "support/error.h"

namespace popc::graph {

Target Target::forArch(const std::string &arch, uint32_t numIpus) {
  if (numIpus == 0 || numIpus > 64)
    fail("--num-ipus {}: must be between 1 and 64", numIpus);
  Target t;
  t.arch = arch;
  t.numIpus = numIpus;
  if (arch == "ipu2") {
    t.tilesPerIpu = 1472;
    t.bytesPerTile = 624 * 1024;
    t.clockHz = 1'330'000'000;
  } else if (arch == "ipu1") {
    t.tilesPerIpu = 1216;
    t.bytesPerTile = 256 * 1024;
    t.clockHz = 1'600'000'000;
  } else {
    fail("--arch {}: unknown architecture (use ipu1 or ipu2)", arch);
  }
  return t;
}

} // namespace popc::graph
