// Fuzz target: one .npy image through popc::npz::readNpy. Any input must either
// parse or throw popc::Error; the sanitizers catch everything else.
#include "formats/npz/npz.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  try {
    popc::npz::Array a = popc::npz::readNpy({data, size}, "fuzz.npy");
    // A parsed array must be self-consistent.
    if (a.data.size() != size_t(popc::numElements(a.shape)) * popc::dtypeSize(a.dtype))
      __builtin_trap();
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
