#include "runtime/device_memory.h"

#include "support/allocator.h"
#include "support/error.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace popc::runtime {

uint64_t DeviceMemory::strideFor(uint32_t bytesPerTile) {
  return std::bit_ceil(2 * (uint64_t(bytesPerTile) + 2 * kGuardBytes));
}

DeviceMemory::DeviceMemory(uint32_t numTiles, uint32_t bytesPerTile)
    : size_(kGuardBytes + size_t(numTiles) * strideFor(bytesPerTile)), stride_(strideFor(bytesPerTile)),
      numTiles_(numTiles), bytesPerTile_(bytesPerTile) {
  void *p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("cannot reserve {} bytes of simulated tile memory ({} tiles x {} bytes, {} bytes apart): {}", size_,
         numTiles, bytesPerTile, stride_, std::strerror(errno));
  base_ = static_cast<uint8_t *>(p);
}

void DeviceMemory::populate(uint32_t t, uint64_t bytes) const {
#ifdef MADV_POPULATE_WRITE
  if (t >= numTiles_ || bytes == 0)
    return;
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(tile(t)) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(tile(t)) + std::min<uint64_t>(bytes, bytesPerTile_) + kPage - 1) &
                        ~(kPage - 1);
  ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)t;
  (void)bytes;
#endif
}

void DeviceMemory::release(size_t part, size_t parts) const {
  // Slices end on whole pages, so no page lies between two of them.
  constexpr size_t kPage = 4096;
  const size_t pages = size_ / kPage;
  releaseWholePages(base_ + pages * part / parts * kPage, base_ + pages * (part + 1) / parts * kPage);
}

DeviceMemory::~DeviceMemory() {
  if (base_)
    ::munmap(base_, size_);
}

} // namespace popc::runtime
