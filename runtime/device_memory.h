// Simulated tile memory: one arena for all tiles, reserved with mmap and
// touched lazily, so tiles a program never uses cost nothing.
#pragma once
#include <cstddef>
#include <cstdint>

namespace popc::runtime {

class DeviceMemory {
public:
  DeviceMemory(uint32_t numTiles, uint32_t bytesPerTile);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  uint8_t *tile(uint32_t t) const { return base_ + size_t(t) * bytesPerTile_; }
  uint32_t numTiles() const { return numTiles_; }
  uint32_t bytesPerTile() const { return bytesPerTile_; }

private:
  uint8_t *base_ = nullptr;
  size_t size_ = 0;
  uint32_t numTiles_ = 0;
  uint32_t bytesPerTile_ = 0;
};

} // namespace popc::runtime
