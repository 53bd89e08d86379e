#include "support/allocator.h"

#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

namespace popc {

void tuneAllocatorForLargeHeaps() {
  // Each setting is best effort: a libc without it keeps its default.
  mallopt(M_MMAP_THRESHOLD, 32 << 20); // glibc's maximum on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);  // keep up to 1 GiB of freed heap
  mallopt(M_TOP_PAD, 256 << 20);       // grow the heap 256 MiB at a time
}

void releaseFreedHeap() { malloc_trim(0); }

void releaseWholePages(const uint8_t *begin, const uint8_t *end) {
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t first = (uintptr_t(begin) + page - 1) / page * page, last = uintptr_t(end) / page * page;
  if (first < last)
    ::madvise(reinterpret_cast<void *>(first), last - first, MADV_DONTNEED);
}

} // namespace popc
