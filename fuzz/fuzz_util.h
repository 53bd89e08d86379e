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

// The checking process (checking_worker.h) died on the input, as the tools'
// checking child would: the tools refuse it with a one-line error.
inline void refusedByChecker() {
  if (verbose())
    std::fprintf(stderr, "  refused: the checking process crashed, timed out or ran out of memory on it\n");
}

inline void accepted() {
  if (verbose())
    std::fprintf(stderr, "  accepted\n");
}

} // namespace popc::fuzz
