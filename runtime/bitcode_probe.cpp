#include "runtime/bitcode_probe.h"

#include "runtime/bitcode_gate.h"
#include "support/child_guard.h"
#include "support/error.h"
#include "support/limits.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/ErrorHandling.h>
#include <llvm/Support/raw_ostream.h>

#include <cstring>

namespace popc::runtime {

namespace {

// The checking process's answer: per module, a status byte and a length-
// prefixed payload (the re-emitted bitcode); a refusal ends the list with its
// message instead.
constexpr uint8_t kModuleChecked = 0, kModuleRefused = 1;

void appendRecord(std::vector<uint8_t> &out, uint8_t status, const void *data, uint64_t size) {
  out.push_back(status);
  const auto *sizeBytes = reinterpret_cast<const uint8_t *>(&size);
  out.insert(out.end(), sizeBytes, sizeBytes + sizeof size);
  const auto *bytes = static_cast<const uint8_t *>(data);
  out.insert(out.end(), bytes, bytes + size);
}

std::string moduleLabel(const std::string &label, size_t m) { return fmt::format("{}: code module {}", label, m); }

} // namespace

void exitOnLlvmOutOfMemory() {
  // LLVM reports a failed allocation through this handler (then aborts):
  // make it the child's out-of-memory exit, so the refusal says so.
  llvm::install_bad_alloc_error_handler([](void *, const char *, bool) { exitOutOfMemory(); });
}

std::vector<uint8_t> checkAndRewriteModules(const std::vector<CodeModuleRef> &modules, const std::string &label,
                                            const std::function<void(uint32_t)> &beforeEach) {
  std::vector<uint8_t> out;
  for (uint32_t m = 0; m < modules.size(); ++m) {
    if (beforeEach)
      beforeEach(m);
    llvm::LLVMContext context;
    try {
      auto module = loadCodeModule(context, modules[m].bitcode, moduleLabel(label, m), modules[m].entrySymbols);
      llvm::SmallVector<char, 0> bitcode;
      llvm::raw_svector_ostream os(bitcode);
      llvm::WriteBitcodeToFile(*module, os);
      appendRecord(out, kModuleChecked, bitcode.data(), bitcode.size());
    } catch (const Error &e) {
      const std::string message = e.what();
      appendRecord(out, kModuleRefused, message.data(), message.size());
      break;
    }
  }
  return out;
}

std::vector<std::vector<uint8_t>> decodeCheckedModules(std::span<const uint8_t> encoded, size_t moduleCount,
                                                       const std::string &label) {
  std::vector<std::vector<uint8_t>> modules;
  while (!encoded.empty()) {
    uint64_t size = 0;
    if (encoded.size() < 1 + sizeof size)
      break;
    const uint8_t status = encoded[0];
    std::memcpy(&size, encoded.data() + 1, sizeof size);
    encoded = encoded.subspan(1 + sizeof size);
    if (size > encoded.size())
      break;
    std::span<const uint8_t> payload = encoded.first(size);
    encoded = encoded.subspan(size);
    if (status == kModuleRefused)
      throw Error(std::string(payload.begin(), payload.end()));
    modules.emplace_back(payload.begin(), payload.end());
  }
  if (modules.size() != moduleCount || !encoded.empty())
    fail("{}: the checking child process returned {} of {} code modules (internal error)", label, modules.size(),
         moduleCount);
  return modules;
}

std::vector<std::vector<uint8_t>> checkCodeModulesInChild(const std::vector<CodeModuleRef> &modules,
                                                          const std::string &label) {
  if (modules.empty())
    return {};
  uint64_t bitcodeBytes = 0;
  for (const CodeModuleRef &module : modules)
    bitcodeBytes += module.bitcode.size();
  std::vector<uint8_t> encoded;
  auto failure = runInChildWithOutput(
      [&](const std::function<void(uint32_t)> &step, std::vector<uint8_t> &output) {
        exitOnLlvmOutOfMemory();
        output = checkAndRewriteModules(modules, label, step); // step: the parent names the module the child died on
      },
      limits::kBitcodeProbeSeconds, limits::bitcodeProbeMemory(bitcodeBytes), encoded);
  if (failure)
    fail("{}: LLVM's bitcode reader {} on it; the module is corrupt or crafted: recompile the model",
         moduleLabel(label, failure->step), failure->what);
  return decodeCheckedModules(encoded, modules.size(), label);
}

} // namespace popc::runtime
