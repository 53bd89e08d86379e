#include "runtime/device_memory.h"

#include "support/error.h"

#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace popc::runtime {

DeviceMemory::DeviceMemory(uint32_t numTiles, uint32_t bytesPerTile)
    : size_(size_t(numTiles) * bytesPerTile), numTiles_(numTiles), bytesPerTile_(bytesPerTile) {
  void *p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("cannot reserve {} bytes of simulated tile memory ({} tiles x {} bytes): {}", size_,
         numTiles, bytesPerTile, std::strerror(errno));
  base_ = static_cast<uint8_t *>(p);
}

DeviceMemory::~DeviceMemory() {
  if (base_)
    ::munmap(base_, size_);
}

} // namespace popc::runtime
