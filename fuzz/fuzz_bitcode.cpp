// Fuzz target: arbitrary bytes through the runtime's bitcode gate
// (popc::runtime::loadCodeModule: LLVM bitcode parse, materialise, verifier and
// the allow-list checks) — what every popef code module goes through before
// the JIT. Entry symbol "vertex" matches nothing in most inputs, which is fine:
// the checks before it still run.
#include "runtime/bitcode_gate.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::LLVMContext context;
  try {
    popc::runtime::loadCodeModule(context, {data, size}, "fuzz.popef: code module 0", {});
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
