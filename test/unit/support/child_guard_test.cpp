// runInChild: how a child that ran untrusted-input code ended, in one line.
#include "support/child_guard.h"
#include "support/error.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <string>
#include <cstdlib>
#include <unistd.h>

using popc::runInChild;

// AddressSanitizer turns a SIGSEGV into its report and then exit code 1, or an
// abort with ASAN_OPTIONS=abort_on_error=1.
bool isSegvOutcome(const std::string &what) {
#if defined(__SANITIZE_ADDRESS__)
  return what == "failed (exit 1)" || what == "crashed (Aborted)";
#else
  return what == "crashed (Segmentation fault)";
#endif
}

TEST_CASE("runInChild reports crashes, aborts, hangs and the last step", "[support]") {
  SECTION("work that returns or refuses cleanly is not a failure") {
    CHECK_FALSE(runInChild([](const auto &) {}, 10));
    CHECK_FALSE(runInChild([](const auto &) { popc::fail("a clean refusal"); }, 10));
  }
  SECTION("a segfault names the signal and the step it happened in") {
    auto f = runInChild(
        [](const auto &step) {
          step(1);
          step(7);
          std::raise(SIGSEGV);
        },
        10);
    REQUIRE(f);
    CHECK(isSegvOutcome(f->what));
    CHECK(f->step == 7);
  }
  SECTION("an abort, another exception, a hang") {
    auto aborted = runInChild([](const auto &) { std::abort(); }, 10);
    REQUIRE(aborted);
    CHECK(aborted->what == "crashed (Aborted)");
    auto thrown = runInChild([](const auto &) { throw 42; }, 10);
    REQUIRE(thrown);
    CHECK(thrown->what == "failed (exit 3)");
    auto hung = runInChild([](const auto &) { ::pause(); }, 1);
    REQUIRE(hung);
    CHECK(hung->what == "did not finish within 1 s");
  }
  SECTION("the parent is untouched: memory the child changes stays as it was") {
    int value = 1;
    CHECK_FALSE(runInChild([&](const auto &) { value = 2; }, 10));
    CHECK(value == 1);
  }
}
