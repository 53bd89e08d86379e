// Fuzz target: arbitrary bytes through the runtime's bitcode gate
// (popc::runtime::loadCodeModule: LLVM bitcode parse, materialise, verifier and
// the allow-list checks) — what every popef code module goes through before
// the JIT. Entry symbol "vertex" matches nothing in most inputs, which is fine:
// the checks before it still run. Like poprun-lite (runtime/bitcode_probe.h),
// each input is first parsed in a separate checking process, so LLVM 19's own
// known crashes (findings/README.md) are refusals and the fuzzer looks for
// popc's problems; POPC_FUZZ_IN_PROCESS=1 skips it to hunt LLVM's crashes.
#include "runtime/bitcode_gate.h"
#include "runtime/bitcode_probe.h"
#include "support/child_guard.h"
#include "support/limits.h"
#include "fuzz/checking_worker.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <cstdlib>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cstddef>
#include <cstdint>

namespace {

void gate(std::span<const uint8_t> bytes, const std::string &label) {
  llvm::LLVMContext context;
  popc::runtime::loadCodeModule(context, bytes, label, {});
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  // The worker checks each input under poprun-lite's probe memory budget, so an
  // input that makes LLVM allocate gigabytes is refused there, as poprun-lite
  // refuses it, instead of slowing the fuzzer to a crawl in-process.
  popc::fuzz::CheckingWorker::serveIfWorker(
      [](std::span<const uint8_t> bytes) {
        static const bool llvmOutOfMemoryExits = (popc::runtime::exitOnLlvmOutOfMemory(), true);
        (void)llvmOutOfMemoryExits;
        popc::limitAddressSpaceGrowth(popc::limits::bitcodeProbeMemory(bytes.size()));
        gate(bytes, "");
      },
      popc::fuzz::kCheckSeconds);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static popc::fuzz::CheckingWorker worker;
  if (!worker.passes({data, size}))
    return 0; // refused, as the tools would refuse it
  try {
    gate({data, size}, "fuzz.popef: code module 0");
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
