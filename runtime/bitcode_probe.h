// Untrusted code modules are parsed once in a forked child before this
// process parses them (support/child_guard.h): LLVM's bitcode reader and
// verifier are not hardened against crafted input (they crash or allocate
// without bound on some corrupt modules, fuzz/findings/README.md), and a
// popef's checksums only catch accidental corruption.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace popc::runtime {

struct CodeModuleRef {
  std::span<const uint8_t> bitcode;
  std::vector<std::string> entrySymbols;
};

// Runs loadCodeModule on every module in a child process. Returns when the
// child finished (modules it refused are left for the caller's own parse to
// report); throws popc::Error naming `label` and the module when the child
// crashed, was killed, took longer than limits::kBitcodeProbeSeconds or needed
// more memory than limits::bitcodeProbeMemory.
void probeCodeModules(const std::vector<CodeModuleRef> &modules, const std::string &label);

// In a process that checks untrusted modules (the probe's child, the fuzzer's
// checking worker): LLVM's allocation failures end it with kOutOfMemoryExit.
void exitOnLlvmOutOfMemory();

} // namespace popc::runtime
