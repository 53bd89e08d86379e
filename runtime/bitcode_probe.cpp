#include "runtime/bitcode_probe.h"

#include "runtime/bitcode_gate.h"
#include "support/child_guard.h"
#include "support/error.h"
#include "support/limits.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/ErrorHandling.h>

namespace popc::runtime {

void exitOnLlvmOutOfMemory() {
  // LLVM reports a failed allocation through this handler (then aborts):
  // make it the child's out-of-memory exit, so the refusal says so.
  llvm::install_bad_alloc_error_handler([](void *, const char *, bool) { exitOutOfMemory(); });
}

void probeCodeModules(const std::vector<CodeModuleRef> &modules, const std::string &label) {
  if (modules.empty())
    return;
  uint64_t bitcodeBytes = 0;
  for (const CodeModuleRef &module : modules)
    bitcodeBytes += module.bitcode.size();
  auto failure = runInChild(
      [&](const std::function<void(uint32_t)> &step) {
        exitOnLlvmOutOfMemory();
        for (uint32_t i = 0; i < modules.size(); ++i) {
          step(i); // so the parent can name the module the child died on
          llvm::LLVMContext context;
          loadCodeModule(context, modules[i].bitcode, "", modules[i].entrySymbols);
        }
      },
      limits::kBitcodeProbeSeconds, limits::bitcodeProbeMemory(bitcodeBytes));
  if (failure)
    fail("{}: code module {}: LLVM's bitcode reader {} on it; the module is corrupt or crafted: recompile the model",
         label, failure->step, failure->what);
}

} // namespace popc::runtime
