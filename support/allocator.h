// Tuning of glibc's allocator for a compiler and runner that build and drop
// data structures of hundreds of MB.
#pragma once

namespace popc {

// By default glibc serves blocks over 128 KiB-32 MiB with their own mmap and
// hands freed heap back to the kernel above 128 KiB, so every growing vector
// and every rebuilt table faults its pages in afresh (a page fault is dear in
// a VM: ResNet-50's ONNX import spent half its time in them). This keeps
// blocks up to 32 MiB in the heap and freed memory in the process for reuse;
// the resident peak is unchanged, as the memory is reused rather than
// returned and faulted in again. Call once, first thing in main.
void tuneAllocatorForLargeHeaps();

} // namespace popc
