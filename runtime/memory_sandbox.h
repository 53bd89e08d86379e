// Software fault isolation for vertex code: after the host O3 pipeline and
// before machine code generation, every memory access of a vertex entry is
// rewritten so that it cannot leave the tile's own slot of the arena, however
// the code computed its address. Calls are already restricted by the bitcode
// gate; this confines memory.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace popc::runtime {

// What the JIT needs to confine a module: each entry symbol's number of
// fields (its field-offset table holds that many uint32) and the shape of a
// tile's window in the arena (runtime/device_memory.h): it starts `guard`
// bytes below tile_base (vectorised code reads a few lanes before a field
// under a mask), is at least `minWindow` bytes, and its size W is the
// uint64 at tile_base - limitSlotBelow, outside every window.
struct MemorySandbox {
  std::map<std::string, unsigned> entryFieldCounts;
  uint64_t guard = 0;
  uint64_t minWindow = 0;
  uint64_t limitSlotBelow = 0;
};

// Rewrites `module` (already optimised) in place. In each entry function
// f(tile_base, field_offsets), W is loaded once, and an access of `size`
// bytes at p goes to
//   tile_base - guard + umin(p - tile_base + guard, W - size)
// so it stays within the window [tile_base - guard, tile_base - guard + W),
// which holds the tile's memory and no other tile's. An address the access
// fits at from there is unchanged. A constant size is at most minWindow (so
// W - size cannot wrap); a dynamic one (memcpy/memset) is first clamped to
// W. Within a basic block, the accesses from one pointer q that valid code
// makes whenever the block runs (anchors: loads, stores, masked ones with a
// constant mask) at q + c, c in [lo, hi - size), span at most minWindow
// bytes: q + lo is confined once for the whole span, umin(.., W - (hi -
// lo)), and every access of the block at q + c' within [lo, hi) goes to
// confined(q + lo) + (c' - lo), the displacement folding into the machine
// address (GoogLeNet: 23 % less machine code, its JIT 16-19 % faster); the
// others are confined one by one. Left alone: loads of the field-offset
// table (field_offsets + constant, within 4 * fields bytes) and constant
// offsets from tile_base that end within minWindow - guard. Accesses to a
// stack object or a module global are clamped into that object instead, so
// valid code is unchanged. Gathers/scatters are confined lane by lane.
// Refuses (popc::Error "<where>: ..."): calls to functions defined in the
// module (not inlined), calls that pass pointers to anything but the memory
// intrinsics it rewrites, atomics, va_arg, non-zero address spaces, dynamic
// or large stack objects, stores to constant globals, and memory accesses in
// functions that are not entries. Every function gets stack probes
// ("probe-stack"), so no frame steps over a thread's guard page.
void confineMemoryAccesses(llvm::Module &module, const MemorySandbox &sandbox, const std::string &where);

} // namespace popc::runtime
