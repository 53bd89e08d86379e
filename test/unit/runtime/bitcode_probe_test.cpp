// The child-process probe in front of LLVM's bitcode reader: a module that
// crashes the reader becomes a one-line popc::Error naming the module; sound
// and cleanly refused modules return (the caller's own parse reports those).
#include "runtime/bitcode_probe.h"
#include "support/error.h"
#include "test/unit/runtime/vertex_ir.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>

using popc::runtime::CodeModuleRef;
using popc::runtime::probeCodeModules;

namespace {
std::vector<uint8_t> finding(const std::string &name) {
  std::ifstream in(std::filesystem::path(POPC_TEST_SOURCE_DIR) / "fuzz/findings" / name, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
} // namespace

TEST_CASE("bitcode probe: sound and cleanly refused modules pass, a reader crash is refused", "[runtime][gate]") {
  const auto good = popc::test::sampleAddBitcode();
  const std::vector<uint8_t> garbage = {'B', 'C', 0xc0, 0xde, 0x35, 0x14, 0x00, 0x00};
  CHECK_NOTHROW(probeCodeModules({}, "x.popef"));
  CHECK_NOTHROW(probeCodeModules({{good, {"add_f32_2"}}, {garbage, {}}}, "x.popef"));

  const auto crash = finding("bitcode-segv-MetadataLoader-parseMetadata.bc");
  try {
    probeCodeModules({{good, {"add_f32_2"}}, {crash, {}}}, "x.popef");
    FAIL("the crashing module was not refused");
  } catch (const popc::Error &e) {
    const std::string what = e.what();
    // "crashed (Segmentation fault)", or "failed (exit 1)" when ASan reports the crash
    CHECK_THAT(what, Catch::StartsWith("x.popef: code module 1: LLVM's bitcode reader "));
    CHECK_THAT(what, Catch::Contains("the module is corrupt or crafted"));
    CHECK(what.find('\n') == std::string::npos);
  }
}
