// Simulated tile memory: one arena for all tiles, reserved with mmap and
// touched lazily, so tiles a program never uses cost nothing. Tile t lives at
// base + kGuardBytes + t * stride + colour(t), the stride a power of two at
// least 2 * (bytes_per_tile + 2 * kGuardBytes) and colour(t) < kGuardBytes a
// few cache lines that keep tiles from mapping to the same cache sets. The
// memory sandbox (memory_sandbox.h) confines a vertex's accesses to its
// window [tile - kGuardBytes, tile - kGuardBytes + stride): its memory plus
// slack, never another tile's memory, always inside the arena.
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

  // The one place a tile's address is computed.
  uint8_t *tile(uint32_t t) const {
    return base_ + kGuardBytes + size_t(t) * stride_ + (t % kColours) * kColourBytes;
  }
  uint32_t numTiles() const { return numTiles_; }
  uint32_t bytesPerTile() const { return bytesPerTile_; }
  uint64_t tileStride() const { return stride_; }
  // Maps the pages of tile t's first `bytes` bytes now, in one system call,
  // instead of one page fault per page at first touch (a page fault is dear in
  // a VM). Best effort: kernels before 5.14 leave the pages to fault lazily.
  void populate(uint32_t t, uint64_t bytes) const;
  // Hands back the pages of part `part` of `parts` equal slices of the arena
  // (MADV_DONTNEED), so that several threads can free the tiles' memory at
  // once before the arena is unmapped: freeing its pages is serial in
  // munmap (GoogLeNet: 26 ms for 289 MiB at exit).
  void release(size_t part, size_t parts) const;

  // How far below its base a tile's window reaches.
  static constexpr uint64_t kGuardBytes = 4096;
  // Without colouring, power-of-two strides put every tile's data in the
  // same cache sets (2x slower on the cnn sample).
  static constexpr uint64_t kColours = 32, kColourBytes = 128;
  static_assert((kColours - 1) * kColourBytes < kGuardBytes);
  // The power of two >= 2 * (bytesPerTile + 2 * kGuardBytes): offsets from
  // -kGuardBytes to bytesPerTile + kGuardBytes stay unchanged by the sandbox.
  static uint64_t strideFor(uint32_t bytesPerTile);

private:
  uint8_t *base_ = nullptr;
  size_t size_ = 0;
  uint64_t stride_ = 0;
  uint32_t numTiles_ = 0;
  uint32_t bytesPerTile_ = 0;
};

} // namespace popc::runtime
