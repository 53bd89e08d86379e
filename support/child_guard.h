// Runs third-party code that is not hardened against crafted input (LLVM's
// bitcode reader, onnx's shape inference) once in a forked child, so that a
// crash, an abort or a hang there becomes a one-line error instead of taking
// the tool down. Either the caller then repeats the work in-process (the
// child ran the same code on the same bytes), or, stronger, the child hands
// back a re-written form of the input that the parent uses instead
// (runInChildWithOutput): a library that reads out of bounds on crafted input
// can pass in the child and crash in the parent, whose heap differs by then.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace popc {

struct ChildFailure {
  std::string what;  // "crashed (Segmentation fault)", "did not finish within 60 s", ...
  uint32_t step = 0; // the last value the work passed to `step` before the failure
};

// Runs `work` in a child process (stdout and stderr discarded, killed after
// `seconds` or when this process dies, and allowed to map at most
// `memoryBytes` more than it started with: 0 = no bound; see
// limitAddressSpaceGrowth). Call it while this process has no
// other threads that could hold a lock the child needs (malloc is safe). A popc::Error thrown by `work` counts as success:
// the caller's own run will report it. Returns the failure, or nullopt.
// Throws popc::Error only when no child can be started.
std::optional<ChildFailure> runInChild(const std::function<void(const std::function<void(uint32_t)> &step)> &work,
                                       unsigned seconds, uint64_t memoryBytes = 0);

// runInChild whose `work` also fills `output`; when the child finished, the
// parent's `output` holds those bytes (passed through a memfd, so any size).
// They are the child's only effect on the parent.
using ChildWorkWithOutput =
    std::function<void(const std::function<void(uint32_t)> &step, std::vector<uint8_t> &output)>;
std::optional<ChildFailure> runInChildWithOutput(const ChildWorkWithOutput &work, unsigned seconds,
                                                 uint64_t memoryBytes, std::vector<uint8_t> &output);

// For a process that runs untrusted-input code and may die: from now on it can
// map at most `bytes` more address space (RLIMIT_AS, relative to what is mapped
// already: a sanitizer's shadow reservations alone are terabytes), and an
// allocation that fails ends it with exit code kOutOfMemoryExit. A crafted
// module that makes a library allocate gigabytes then ends the checking
// process early instead of the real run swapping. Libraries that report
// allocation failure their own way (LLVM) should call exitOutOfMemory.
constexpr int kOutOfMemoryExit = 5;
void limitAddressSpaceGrowth(uint64_t bytes);
[[noreturn]] void exitOutOfMemory();

} // namespace popc
