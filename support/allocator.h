// Tuning of glibc's allocator for a compiler and runner that build and drop
// data structures of hundreds of MB.
#pragma once

#include <atomic>
#include <cstdint>

namespace popc {

// By default glibc serves blocks over 128 KiB-32 MiB with their own mmap and
// hands freed heap back to the kernel above 128 KiB, so every growing vector
// and every rebuilt table faults its pages in afresh (a page fault is dear in
// a VM: ResNet-50's ONNX import spent half its time in them). This keeps
// blocks up to 32 MiB in the heap and freed memory in the process for reuse;
// the resident peak is unchanged, as the memory is reused rather than
// returned and faulted in again. Call once, first thing in main.
void tuneAllocatorForLargeHeaps();

// Hands the heap's free pages back to the kernel now (malloc_trim): for the
// moment a large structure has been freed and what comes next does not reuse
// the heap (blocks over 32 MiB are mmapped), e.g. the compiler's object tree
// once packed, before the popef file's bytes are assembled.
void releaseFreedHeap();

// Lets the kernel drop the whole pages inside [begin, end) (MADV_DONTNEED;
// the partial pages at either end stay). A mapped file's pages read back from
// the page cache; an anonymous mapping's read back as zeros, so only for bytes
// that are not read again.
void releaseWholePages(const uint8_t *begin, const uint8_t *end);

// For a loop that frees a large structure piece by piece while it builds the
// next: freed memory stays in the heap (see above) while the new structure
// faults in fresh pages, so both would be resident. Calls releaseFreedHeap()
// each time the bytes reported to freed() cross another multiple of `every`.
// Safe to call from several threads (each allocates from its own arena, so
// what one thread freed does not serve another's next allocation).
class PeriodicHeapRelease {
public:
  explicit PeriodicHeapRelease(uint64_t every = uint64_t(64) << 20) : every_(every) {}
  void freed(uint64_t bytes) {
    const uint64_t before = total_.fetch_add(bytes);
    if (before / every_ != (before + bytes) / every_)
      releaseFreedHeap();
  }

private:
  const uint64_t every_;
  std::atomic<uint64_t> total_{0};
};

} // namespace popc
