// parallelFor: every index once, whatever the threads; the lowest failing index is the error reported.
#include "support/error.h"
#include "support/parallel.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <vector>

TEST_CASE("parallelFor runs every index exactly once", "[support][parallel]") {
  for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(10000)}) {
    std::vector<std::atomic<int>> runs(n);
    popc::parallelFor(n, [&](size_t i) { runs[i]++; });
    for (size_t i = 0; i < n; ++i)
      CHECK(runs[i] == 1);
  }
}

TEST_CASE("parallelFor rethrows the failure of the lowest index after every call", "[support][parallel]") {
  std::atomic<size_t> calls{0};
  try {
    popc::parallelFor(1000, [&](size_t i) {
      calls++;
      if (i == 700 || i == 300)
        popc::fail("index {}", i);
    });
    FAIL("no exception");
  } catch (const popc::Error &e) {
    CHECK(std::string(e.what()) == "index 300");
  }
  CHECK(calls == 1000); // the other indices still ran: no half-written results depend on timing
}
