// runInChild: how a child that ran untrusted-input code ended, in one line.
#include "support/child_guard.h"
#include "support/error.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <string>
#include <cstdlib>
#include <unistd.h>
#include <vector>

using popc::runInChild;

// A crash by `signal`: "crashed (Segmentation fault)". Sanitizers intercept
// SIGSEGV/SIGABRT and report them their own way: an exit code (ASan 1, TSan 66)
// or an abort.
bool isCrash(const std::string &what, const std::string &signal) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return what.rfind("crashed (", 0) == 0 || what.rfind("failed (exit ", 0) == 0;
#else
  return what == "crashed (" + signal + ")";
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
    CHECK(isCrash(f->what, "Segmentation fault"));
    CHECK(f->step == 7);
  }
  SECTION("an abort, another exception, a hang") {
    auto aborted = runInChild([](const auto &) { std::abort(); }, 10);
    REQUIRE(aborted);
    CHECK(isCrash(aborted->what, "Aborted"));
    auto thrown = runInChild([](const auto &) { throw 42; }, 10);
    REQUIRE(thrown);
    CHECK(thrown->what == "failed (exit 3)");
    auto hung = runInChild([](const auto &) { ::pause(); }, 1);
    REQUIRE(hung);
    CHECK(hung->what == "did not finish within 1 s");
  }
  SECTION("a child over its memory budget is stopped and says so") {
    // 2 GiB in one allocation against a 256 MiB budget: operator new fails.
    auto greedy = runInChild([](const auto &) { std::vector<char> v(size_t{2} << 30, 1); }, 10, uint64_t{256} << 20);
    REQUIRE(greedy);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    CHECK(isCrash(greedy->what, "Aborted")); // the sanitizer's allocator reports it its own way
#else
    CHECK(greedy->what == "ran out of its 256 MiB memory budget");
#endif
    // Within budget: the same child with room for it finishes.
    CHECK_FALSE(runInChild([](const auto &) { std::vector<char> v(size_t{64} << 20, 1); }, 10, uint64_t{256} << 20));
  }
  SECTION("the parent is untouched: memory the child changes stays as it was") {
    int value = 1;
    CHECK_FALSE(runInChild([&](const auto &) { value = 2; }, 10));
    CHECK(value == 1);
  }
}
