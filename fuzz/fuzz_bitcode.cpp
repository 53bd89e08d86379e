// Fuzz target: arbitrary bytes through the runtime's bitcode gate
// (popc::runtime::loadCodeModule: LLVM bitcode parse, materialise, verifier and
// the allow-list checks) — what every popef code module goes through before
// the JIT. Entry symbol "vertex" matches nothing in most inputs, which is fine:
// the checks before it still run. Like poprun-lite, it first parses in a
// forked child (runtime/bitcode_probe.h), so LLVM 19's own known crashes
// (findings/README.md) are refusals and the fuzzer looks for popc's problems;
// POPC_FUZZ_IN_PROCESS=1 skips the child to hunt LLVM's crashes directly.
#include "runtime/bitcode_gate.h"
#include "runtime/bitcode_probe.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <cstdlib>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const bool inProcess = std::getenv("POPC_FUZZ_IN_PROCESS") != nullptr;
  llvm::LLVMContext context;
  try {
    if (!inProcess)
      popc::runtime::probeCodeModules({{{data, size}, {}}}, "fuzz.popef");
    popc::runtime::loadCodeModule(context, {data, size}, "fuzz.popef: code module 0", {});
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
