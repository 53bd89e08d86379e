#include "popc/Target.hpp"

#include "compiler/graph/target.h"
#include "support/error.h"

namespace popc::api {

Target Target::createIPUTarget(unsigned numIpus, const std::string &arch, unsigned tilesPerIpu) {
  const graph::Target g = graph::Target::forArch(arch, numIpus);
  if (numIpus == 0)
    fail("createIPUTarget: numIpus must be at least 1");
  if (tilesPerIpu > g.tilesPerIpu)
    fail("createIPUTarget: {} has {} tiles per IPU, asked for {}", arch, g.tilesPerIpu, tilesPerIpu);
  Target t;
  t.arch_ = g.arch;
  t.numIpus_ = g.numIpus;
  t.tilesPerIpu_ = tilesPerIpu ? tilesPerIpu : g.tilesPerIpu;
  t.bytesPerTile_ = g.bytesPerTile;
  t.workers_ = g.workersPerTile;
  t.exchangeBytesPerCycle_ = g.exchangeBytesPerCycle;
  t.clockHz_ = g.clockHz;
  return t;
}

} // namespace popc::api
