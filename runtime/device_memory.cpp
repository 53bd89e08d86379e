#include "runtime/device_memory.h"

#include "runtime/thread_pool.h"

#include "support/allocator.h"
#include "support/error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>

namespace popc::runtime {

namespace {

constexpr uint64_t kHugePage = 2u << 20;
constexpr uint64_t kPage = 4096;

uint64_t roundUp(uint64_t x, uint64_t to) { return (x + to - 1) / to * to; }

// The window of a tile that may use `bytes` bytes: guard, memory, slack,
// at least kMinWindowBytes, ending on a tile boundary once the next tile's
// slot line is added.
uint64_t windowFor(uint64_t bytes) {
  return std::max(roundUp(DeviceMemory::kGuardBytes + bytes + DeviceMemory::kSlackBytes, DeviceMemory::kTileAlign),
                  DeviceMemory::kMinWindowBytes);
}

// An arena of `bytes` windows and slot lines, as mapped: rounded to a huge
// page, or to a 4 KiB page when under one (a small arena stays small: no
// huge page to fill).
uint64_t roundArena(uint64_t bytes) {
  return roundUp(std::max<uint64_t>(bytes, 1), bytes < kHugePage ? kPage : kHugePage);
}

} // namespace

DeviceMemory::DeviceMemory(uint32_t numTiles, uint32_t bytesPerTile) {
  layOut(std::vector<uint32_t>(numTiles, bytesPerTile), nullptr);
}

DeviceMemory::DeviceMemory(std::span<const uint32_t> tileBytes, ThreadPool *populateOn) {
  layOut(tileBytes, populateOn);
}

uint64_t DeviceMemory::arenaBytes(std::span<const uint32_t> tileBytes) {
  uint64_t at = 0;
  for (uint32_t bytes : tileBytes)
    at += kTileAlign + windowFor(bytes);
  return roundArena(at);
}

void DeviceMemory::layOut(std::span<const uint32_t> tileBytes, ThreadPool *populateOn) {
  static_assert(kGuardBytes % kTileAlign == 0 && kMinWindowBytes % kTileAlign == 0 && kLimitSlotBelow > kGuardBytes);
  // Each tile: one line for its limit slot, then its window.
  tileOffset_.resize(tileBytes.size());
  uint64_t at = 0;
  for (size_t t = 0; t < tileBytes.size(); ++t) {
    tileOffset_[t] = at + kTileAlign + kGuardBytes;
    at += kTileAlign + windowFor(tileBytes[t]);
  }
  size_ = roundArena(at); // = arenaBytes(tileBytes)
  mappingSize_ = size_ + kHugePage;
  void *p = ::mmap(nullptr, mappingSize_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    fail("cannot reserve {} bytes of simulated tile memory for {} tiles: {}", size_, tileBytes.size(),
         std::strerror(errno));
  mapping_ = static_cast<uint8_t *>(p);
  base_ = reinterpret_cast<uint8_t *>(roundUp(reinterpret_cast<uintptr_t>(mapping_), kHugePage));
#ifdef MADV_HUGEPAGE
  ::madvise(base_, size_, MADV_HUGEPAGE); // best effort: THP may be off
#endif
  if (populateOn) {
    const size_t parts = populateOn->size() * 2;
    populateOn->parallelFor(parts, [&](size_t i) { populate(i, parts); });
  }
  // After the pages are mapped: written first, each would fault its page in alone.
  for (uint32_t t = 0; t < tileBytes.size(); ++t) {
    const uint64_t window = windowFor(tileBytes[t]);
    std::memcpy(tile(t) - kLimitSlotBelow, &window, sizeof window);
  }
}

uint64_t DeviceMemory::windowBytes(uint32_t t) const {
  uint64_t window;
  std::memcpy(&window, tile(t) - kLimitSlotBelow, sizeof window);
  return window;
}

void DeviceMemory::populate(size_t part, size_t parts) const {
#ifdef MADV_POPULATE_WRITE
  // Slices on huge-page boundaries, so that no thread splits another's page
  // (an arena under one huge page is sliced by 4 KiB pages).
  const size_t unit = size_ % kHugePage ? kPage : kHugePage, pages = size_ / unit;
  const size_t begin = pages * part / parts * unit, end = pages * (part + 1) / parts * unit;
  if (end > begin)
    ::madvise(base_ + begin, end - begin, MADV_POPULATE_WRITE);
#else
  (void)part;
  (void)parts;
#endif
}

void DeviceMemory::release(size_t part, size_t parts) const {
  // Slices end on whole pages, so no page lies between two of them.
  const size_t pages = size_ / kPage;
  releaseWholePages(base_ + pages * part / parts * kPage, base_ + pages * (part + 1) / parts * kPage);
}

DeviceMemory::~DeviceMemory() {
  if (mapping_)
    ::munmap(mapping_, mappingSize_);
}

} // namespace popc::runtime
