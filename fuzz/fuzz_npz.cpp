// Fuzz target: a .npz archive (zip of .npy members) through
// popc::npz::readNpzBytes — libzip's parsing plus the member and .npy checks.
#include "formats/npz/npz.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    popc::npz::readNpzBytes({data, size}, "fuzz.npz");
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
