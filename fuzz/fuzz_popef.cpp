// Fuzz target: popef bytes through popc::popef::Executable::fromBytes, which runs
// the flatbuffers Verifier and the semantic checks. An accepted executable is
// walked through the reader helpers the runtime relies on. Inputs are re-sealed
// (file checksum trailer recomputed) so mutations reach the structural checks
// instead of stopping at the checksum.
#include "formats/popef/popef.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    std::vector<uint8_t> bytes(data, data + size);
    popc::popef::seal(bytes);
    auto exe = popc::popef::Executable::fromBytes(std::move(bytes), "fuzz.popef");
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
