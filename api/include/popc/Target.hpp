// popc graph API: the simulated IPU target a Graph is built for.
#pragma once
#include <cstdint>
#include <string>

namespace popc::api {

class Target {
public:
  // `arch` "ipu1" or "ipu2"; tilesPerIpu 0 = the architecture's full count.
  static Target createIPUTarget(unsigned numIpus = 1, const std::string &arch = "ipu2", unsigned tilesPerIpu = 0);

  const std::string &getArch() const { return arch_; }
  unsigned getNumIPUs() const { return numIpus_; }
  unsigned getTilesPerIPU() const { return tilesPerIpu_; }
  unsigned getNumTiles() const { return numIpus_ * tilesPerIpu_; }
  unsigned getBytesPerTile() const { return bytesPerTile_; }
  unsigned getNumWorkerContexts() const { return workers_; }
  unsigned getExchangeBytesPerCycle() const { return exchangeBytesPerCycle_; }
  uint64_t getTileClockFrequency() const { return clockHz_; }

private:
  std::string arch_ = "ipu2";
  unsigned numIpus_ = 1, tilesPerIpu_ = 1472, bytesPerTile_ = 624 * 1024, workers_ = 6, exchangeBytesPerCycle_ = 4;
  uint64_t clockHz_ = 1'330'000'000;
};

// Poplar-style device handles: the IPU Model is the only device there is.
class Device {
public:
  explicit Device(Target t = Target::createIPUTarget()) : target_(std::move(t)) {}
  const Target &getTarget() const { return target_; }
  bool attach() { return true; }
  void detach() {}

private:
  Target target_;
};

struct IPUModel {
  explicit IPUModel(const char *version = "ipu2") : arch(version) {}
  std::string arch;
  unsigned numIPUs = 1;
  unsigned tilesPerIPU = 0; // 0 = the architecture's count
  Device createDevice() const { return Device(Target::createIPUTarget(numIPUs, arch, tilesPerIPU)); }
};

} // namespace popc::api
