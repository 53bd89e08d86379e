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
// fields (its field-offset table holds that many uint32), half the tile
// stride of the arena (a power of two) and the guard: how far below
// tile_base an access may still go unchanged (vectorised code reads a few
// lanes before a field under a mask). halfStride >= bytes per tile + guard.
struct MemorySandbox {
  std::map<std::string, unsigned> entryFieldCounts;
  uint64_t halfStride = 0;
  uint64_t guard = 0;
};

// Rewrites `module` (already optimised) in place. In each entry function
// f(tile_base, field_offsets), an access of `size` <= halfStride bytes at p
// goes to
//   tile_base + (((p - tile_base + guard) & (halfStride - 1)) - guard)
// so it stays within [tile_base - guard, tile_base - guard + 2 * halfStride),
// the tile's window; windows of tiles a stride apart are disjoint and hold
// no other tile's memory. Addresses in [tile_base - guard, tile_base +
// halfStride - guard) are unchanged. Within a basic block, the accesses at
// q + c from one pointer q share one confined address: that of the block's
// anchor with the lowest c (a load or store, or a masked one with a constant
// mask: valid code makes it in bounds whenever the block runs). An access at
// q + c' with c' >= c and c' - c + size <= halfStride goes to
// confined(q + c) + (c' - c), still inside the window, and the displacement
// folds into the machine address (GoogLeNet: 23 % less machine code, its JIT
// 16-19 % faster); the others are confined one by one. Left alone: loads of the field-offset
// table (field_offsets + constant, within 4 * fields bytes) and constant
// offsets from tile_base in [0, halfStride - guard). Accesses to a stack object or a module
// global are clamped into that object instead, so valid code is unchanged.
// memcpy/memset lengths are clamped to halfStride; gathers/scatters are
// masked lane by lane.
// Refuses (popc::Error "<where>: ..."): calls to functions defined in the
// module (not inlined), calls that pass pointers to anything but the memory
// intrinsics it rewrites, atomics, va_arg, non-zero address spaces, dynamic
// or large stack objects, stores to constant globals, and memory accesses in
// functions that are not entries. Every function gets stack probes
// ("probe-stack"), so no frame steps over a thread's guard page.
void confineMemoryAccesses(llvm::Module &module, const std::map<std::string, unsigned> &entryFieldCounts,
                           uint64_t halfStride, uint64_t guard, const std::string &where);

} // namespace popc::runtime
