// Shared by the fuzz targets: with POPC_FUZZ_VERBOSE=1 in the environment, print
// why an input was rejected (handy to check that seeds are accepted and reach
// the deep checks; off while fuzzing, where it would only slow things down).
#pragma once
#include "support/error.h"

#include <cstdio>
#include <cstdlib>

namespace popc::fuzz {

inline bool verbose() {
  static const bool on = std::getenv("POPC_FUZZ_VERBOSE") != nullptr;
  return on;
}

inline void rejected(const popc::Error &e) {
  if (verbose())
    std::fprintf(stderr, "  rejected: %s\n", e.what());
}

inline void accepted() {
  if (verbose())
    std::fprintf(stderr, "  accepted\n");
}

} // namespace popc::fuzz
