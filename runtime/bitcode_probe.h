// Untrusted code modules are parsed and gated in a forked child, never in this
// process (support/child_guard.h): LLVM's bitcode reader and verifier are not
// hardened against crafted input. They crash, allocate without bound, or read
// out of bounds on some corrupt modules (fuzz/findings/README.md), and an
// out-of-bounds read depends on the heap, so a module that passed in the child
// could still crash this process. The child hands back each module as LLVM's
// bitcode writer re-emits it after the gate; this process parses only those
// bytes. A popef's checksums only catch accidental corruption.
#pragma once
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace popc::runtime {

struct CodeModuleRef {
  std::span<const uint8_t> bitcode;
  std::vector<std::string> entrySymbols;
};

// Runs loadCodeModule on every module in a child process and returns the
// re-emitted bitcode of each. Throws popc::Error naming `label` and the module
// when the gate refused one (its message, as loadCodeModule words it), or the
// child crashed, was killed, took longer than limits::kBitcodeProbeSeconds or
// needed more memory than limits::bitcodeProbeMemory.
std::vector<std::vector<uint8_t>> checkCodeModulesInChild(const std::vector<CodeModuleRef> &modules,
                                                          const std::string &label);

// The two halves, for a checking process other than a forked child (the
// fuzzer's worker). In the checking process: gate every module and encode the
// re-emitted bitcode, or the first refusal, as bytes (`beforeEach` is told the
// index of each module as it starts).
std::vector<uint8_t> checkAndRewriteModules(const std::vector<CodeModuleRef> &modules, const std::string &label,
                                            const std::function<void(uint32_t)> &beforeEach = nullptr);
// In this process: the modules from those bytes, or the refusal as popc::Error.
std::vector<std::vector<uint8_t>> decodeCheckedModules(std::span<const uint8_t> encoded, size_t moduleCount,
                                                       const std::string &label);

// In a process that checks untrusted modules (the child, the fuzzer's
// checking worker): LLVM's allocation failures end it with kOutOfMemoryExit.
void exitOnLlvmOutOfMemory();

} // namespace popc::runtime
