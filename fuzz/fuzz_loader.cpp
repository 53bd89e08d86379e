// Fuzz target: the popef loader up to, not including, running vertices:
// Executable::fromBytes (flatbuffers Verifier + semantic checks), the memory
// budget (runtime/memory_budget.h), then Engine construction with skipJit —
// tile memory reservation, constant loading, compute-set and exchange tables,
// I/O description — everything but the bitcode gate and JIT (covered by
// fuzz_bitcode) and execution. Inputs are re-sealed like fuzz_popef's.
#include "formats/popef/popef.h"
#include "fuzz/fuzz_util.h"
#include "runtime/engine.h"
#include "runtime/memory_budget.h"
#include "support/error.h"

#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    std::vector<uint8_t> bytes(data, data + size);
    popc::popef::seal(bytes);
    auto exe = popc::popef::Executable::fromBytes(std::move(bytes), "fuzz.popef");
    // 1 GiB: the fuzzer's RSS limit is 4 GB and tile memory is touched by constants.
    popc::runtime::checkMemoryBudget(*exe, 1ull << 30);
    popc::runtime::EngineOptions options;
    options.threads = 1;
    options.skipJit = true;
    popc::runtime::Engine engine(exe, options);
    (void)engine.describeInputs();
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
