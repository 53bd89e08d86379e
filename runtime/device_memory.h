// Simulated tile memory: one arena for all tiles, packed tile after tile so
// that the host's TLB and caches see only the bytes the program planned.
// Each tile has a window of its own (runtime/README.md, "Memory sandbox"):
//
//   [limit slot][kGuardBytes below][the tile's memory][slack above]
//                ^ window start     ^ tile(t)
//
// The memory sandbox (memory_sandbox.h) confines a vertex's accesses to
// [tile(t) - kGuardBytes, tile(t) - kGuardBytes + windowBytes(t)), which
// holds the tile's memory and never another tile's. windowBytes(t) sits in
// the 8-byte limit slot just below the window, where only the runtime
// writes: every write of vertex code is confined to its window, and every
// host copy the verifier has bounded by the tile's planned bytes.
//
// The arena is 2 MiB aligned and asks for transparent huge pages: a run
// walks every tile's memory, and 4 KiB pages made the TLB misses of that
// walk 10-17 % of a CNN's run (docs/performance.md, eighteenth round).
#pragma once
#include "runtime/memory_sandbox.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace popc::runtime {

class ThreadPool;

class DeviceMemory {
public:
  // Every tile may use bytesPerTile bytes.
  DeviceMemory(uint32_t numTiles, uint32_t bytesPerTile);
  // Tile t may use tileBytes[t] bytes (the executable's verified
  // tile_bytes_used). With a pool, the arena's pages are mapped up front on
  // its threads, in one system call per slice, instead of one page fault at
  // a time at first touch (a page fault is dear in a VM; best effort:
  // kernels before 5.14 leave the pages to fault lazily).
  explicit DeviceMemory(std::span<const uint32_t> tileBytes, ThreadPool *populateOn = nullptr);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory &) = delete;
  DeviceMemory &operator=(const DeviceMemory &) = delete;

  // The one place a tile's address is computed.
  uint8_t *tile(uint32_t t) const { return base_ + tileOffset_[t]; }
  uint32_t numTiles() const { return uint32_t(tileOffset_.size()); }
  // One past the arena's last byte; its size.
  uint8_t *end() const { return base_ + size_; }
  uint64_t bytes() const { return size_; }
  // The size of tile t's window, from kGuardBytes below tile(t).
  uint64_t windowBytes(uint32_t t) const;
  // Hands back the pages of part `part` of `parts` equal slices of the arena
  // (MADV_DONTNEED), so that several threads can free the tiles' memory at
  // once before the arena is unmapped: freeing its pages is serial in
  // munmap (GoogLeNet: 26 ms for 289 MiB at exit).
  void release(size_t part, size_t parts) const;

  // How far below tile(t) its window reaches: vectorised code may address a
  // vector or two below a field under a mask.
  static constexpr uint64_t kGuardBytes = 512;
  // How far above the tile's memory its window reaches, for the same reason.
  static constexpr uint64_t kSlackBytes = 512;
  // No window is smaller: the sandbox lets an access (or a group of accesses
  // from one pointer) of up to this many bytes through with one clamp.
  static constexpr uint64_t kMinWindowBytes = 4096;
  // The limit slot (a uint64_t windowBytes(t)) lies this far below tile(t),
  // just under the window.
  static constexpr uint64_t kLimitSlotBelow = kGuardBytes + 8;
  // Tiles start on this boundary (vector loads and cache lines).
  static constexpr uint64_t kTileAlign = 128;
  // The bytes an arena for tiles that may use tileBytes[t] maps (and the
  // engine populates): windows and limit slots, rounded to a huge page (to a
  // 4 KiB page when under one).
  static uint64_t arenaBytes(std::span<const uint32_t> tileBytes);
  // The sandbox that confines vertex code to these windows (its entries
  // still to be filled in).
  static MemorySandbox sandbox() { return {{}, kGuardBytes, kMinWindowBytes, kLimitSlotBelow}; }

private:
  void layOut(std::span<const uint32_t> tileBytes, ThreadPool *populateOn);
  void populate(size_t part, size_t parts) const;

  uint8_t *mapping_ = nullptr; // what mmap returned (base_ rounded up to 2 MiB)
  size_t mappingSize_ = 0;
  uint8_t *base_ = nullptr;
  size_t size_ = 0;
  std::vector<uint64_t> tileOffset_; // tile(t) - base_
};

} // namespace popc::runtime
