#include "support/allocator.h"

#include <malloc.h>

namespace popc {

void tuneAllocatorForLargeHeaps() {
  // Each setting is best effort: a libc without it keeps its default.
  mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's maximum on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // keep up to 1 GiB of freed heap
  mallopt(M_TOP_PAD, 256 << 20);       // grow the heap 256 MiB at a time
}

void releaseFreedHeap() { malloc_trim(0); }

} // namespace popc
