// Resource limits for untrusted input, in one place (docs/reliability.md lists
// them with what each tool does when one is hit). The popef reader's structural
// limits (tiles, bytes per tile, program depth, Repeat count, tensor size) live
// beside the format in formats/popef/popef.h.
#pragma once
#include <atomic>
#include <cstdint>

namespace popc::limits {

// --max-memory default (popc-onnx, poprun-lite; env POPC_MAX_MEMORY): the bytes a
// run or compile may plan to hold, checked against declared sizes before allocating.
constexpr uint64_t kDefaultMaxMemory = 16ull << 30; // 16 GiB

// ONNX import: nesting of subgraphs (If/Loop bodies, inside each other) and the
// node count the model may grow to while If/Loop/function bodies are expanded.
constexpr int kMaxSubgraphDepth = 16; // protobuf itself stops parsing near 33
constexpr int64_t kMaxExpandedNodes = 1 << 20;

// poprun-lite exit codes: 0 ok, 1 bad input or refused by a limit, 2 internal
// error (a popc bug), 3 stopped by --timeout.
constexpr int kExitOk = 0, kExitError = 1, kExitInternal = 2, kExitTimeout = 3;
// After --timeout, how long a vertex may keep running before the process exits
// anyway (vertex code is not interruptible; steps are checked between).
constexpr unsigned kTimeoutGraceSeconds = 2;

// poprun-lite parses a popef's code modules in a child process first
// (runtime/bitcode_probe.h); a child that takes longer is killed and the file
// refused. Parsing every module of ResNet-50 takes well under a second.
constexpr unsigned kBitcodeProbeSeconds = 60;
// ... and may map this much more memory (then it is refused too): a fixed
// allowance plus a multiple of the modules' size. Parsing and verifying
// ResNet-50's 300 KB module takes about 6 MB; a crafted 6 KB module made LLVM
// 19's reader allocate 3.2 GB (fuzz/findings/README.md).
constexpr uint64_t kBitcodeProbeBaseBytes = 512ull << 20;
constexpr uint64_t kBitcodeProbeBytesPerByte = 64;
// Independent of --max-memory, which bounds the data a run declares.
constexpr uint64_t bitcodeProbeMemory(uint64_t bitcodeBytes) {
  return kBitcodeProbeBaseBytes + kBitcodeProbeBytesPerByte * bitcodeBytes;
}
// popc-onnx imports a model once in a child process first (libonnx's shape
// inference crashes on some malformed models); a child that takes longer is
// killed and the model refused.
constexpr unsigned kOnnxImportProbeSeconds = 600;

} // namespace popc::limits

namespace popc::limits {
// The process's --max-memory (0 = none), set once by the tool's main before any
// input is read; checked by readers against the sizes an input declares.
inline std::atomic<uint64_t> &memoryBudgetSetting() {
  static std::atomic<uint64_t> budget{kDefaultMaxMemory};
  return budget;
}
inline uint64_t memoryBudget() { return memoryBudgetSetting().load(std::memory_order_relaxed); }
inline void setMemoryBudget(uint64_t bytes) { memoryBudgetSetting().store(bytes); }
} // namespace popc::limits
