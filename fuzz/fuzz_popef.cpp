// Fuzz target: popef bytes through popc::popef::Executable::fromBytes, which runs
// the flatbuffers Verifier and the semantic checks. An accepted executable is
// walked through the reader helpers the runtime relies on.
#include "formats/popef/popef.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    auto exe = popc::popef::Executable::fromBytes({data, data + size}, "fuzz.popef");
    if (const auto *tensors = exe->root().tensors())
      for (const auto *t : *tensors) {
        (void)popc::popef::tensorBytes(*t);
        (void)popc::popef::tensorShape(*t);
      }
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
