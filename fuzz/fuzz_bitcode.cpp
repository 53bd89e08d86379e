// Fuzz target: arbitrary bytes as a popef code module, through what poprun-lite
// does with one (runtime/bitcode_probe.h): the checking process parses it and
// runs the bitcode gate (LLVM bitcode parse, materialise, verifier, the
// allow-list) and re-emits it with LLVM's bitcode writer; this process decodes
// that answer and gates the re-emitted module again, as the JIT's input. The
// checking process is the fuzzer's worker (checking_worker.h), under the
// probe's memory budget, so LLVM 19's known crashes (findings/README.md) are
// refusals and the fuzzer looks for popc's problems. Entry symbol "vertex"
// matches nothing in most inputs, which is fine: the checks before it run.
// POPC_FUZZ_IN_PROCESS=1 gates the raw input in-process, to hunt LLVM's crashes.
#include "fuzz/checking_worker.h"
#include "fuzz/fuzz_util.h"
#include "runtime/bitcode_gate.h"
#include "runtime/bitcode_probe.h"
#include "support/child_guard.h"
#include "support/error.h"
#include "support/limits.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstddef>
#include <cstdint>

namespace {

const std::string kLabel = "fuzz.popef";

void gate(std::span<const uint8_t> bytes) {
  llvm::LLVMContext context;
  popc::runtime::loadCodeModule(context, bytes, kLabel + ": code module 0", {});
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  popc::fuzz::CheckingWorker::serveIfWorker(
      [](std::span<const uint8_t> bytes, std::vector<uint8_t> &output) {
        static const bool llvmOutOfMemoryExits = (popc::runtime::exitOnLlvmOutOfMemory(), true);
        (void)llvmOutOfMemoryExits;
        popc::limitAddressSpaceGrowth(popc::limits::bitcodeProbeMemory(bytes.size()));
        output = popc::runtime::checkAndRewriteModules({{bytes, {}}}, kLabel);
      },
      popc::fuzz::kCheckSeconds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static popc::fuzz::CheckingWorker worker;
  std::vector<uint8_t> answer;
  if (!worker.passes({data, size}, &answer))
    return 0; // refused, as poprun-lite would refuse it
  try {
    if (worker.inProcess())
      gate({data, size});
    else
      gate(popc::runtime::decodeCheckedModules(answer, 1, kLabel).at(0));
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
