// The checking child in front of LLVM's bitcode reader: sound modules come
// back re-emitted by LLVM's writer (what poprun-lite then parses), a refusal or
// a reader crash becomes a one-line popc::Error naming the module.
#include "runtime/bitcode_gate.h"
#include "runtime/bitcode_probe.h"
#include "support/error.h"
#include "test/unit/runtime/vertex_ir.h"

#include <catch2/catch.hpp>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <filesystem>
#include <fstream>
#include <iterator>

using popc::runtime::checkCodeModulesInChild;
using popc::runtime::CodeModuleRef;

namespace {
std::vector<uint8_t> finding(const std::string &name) {
  std::ifstream in(std::filesystem::path(POPC_TEST_SOURCE_DIR) / "fuzz/findings" / name, std::ios::binary);
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string refusal(const std::vector<CodeModuleRef> &modules) {
  try {
    checkCodeModulesInChild(modules, "x.popef");
  } catch (const popc::Error &e) {
    return e.what();
  }
  FAIL("the module was not refused");
  return "";
}
} // namespace

TEST_CASE("bitcode probe: sound modules come back re-emitted, others are refused in one line", "[runtime][gate]") {
  const auto good = popc::test::sampleAddBitcode();
  CHECK(checkCodeModulesInChild({}, "x.popef").empty());

  SECTION("a sound module comes back as bitcode that passes the gate again") {
    const auto checked = checkCodeModulesInChild({{good, {"add_f32_2"}}, {good, {}}}, "x.popef");
    REQUIRE(checked.size() == 2);
    CHECK(checked[0] == checked[1]);
    llvm::LLVMContext context;
    CHECK(popc::runtime::loadCodeModule(context, checked[0], "re-emitted", {"add_f32_2"}) != nullptr);
  }
  SECTION("the gate's refusal in the child is the error, naming the module") {
    const std::vector<uint8_t> garbage = {'B', 'C', 0xc0, 0xde, 0x35, 0x14, 0x00, 0x00};
    CHECK_THAT(refusal({{good, {"add_f32_2"}}, {garbage, {}}}),
               Catch::StartsWith("x.popef: code module 1: invalid bitcode"));
  }
  SECTION("a module that crashes the reader") {
    const std::string what = refusal({{good, {"add_f32_2"}}, {finding("bitcode-segv-MetadataLoader-parseMetadata.bc"), {}}});
    // "crashed (Segmentation fault)", or "failed (exit 1)" when ASan reports the crash
    CHECK_THAT(what, Catch::StartsWith("x.popef: code module 1: LLVM's bitcode reader "));
    CHECK_THAT(what, Catch::Contains("the module is corrupt or crafted"));
    CHECK(what.find('\n') == std::string::npos);
  }
  SECTION("a module whose reader crash depends on the heap: refused, and never parsed in this process") {
    // Passed a fresh process's reader but crashed poprun-lite's own parse after
    // a passing probe (the heap differed by then); now this process never sees it.
    const std::string what = refusal({{finding("bitcode-heapdependent-segv-parseMetadataAttachment.bc"), {}}});
    CHECK_THAT(what, Catch::StartsWith("x.popef: code module 0: "));
    CHECK(what.find('\n') == std::string::npos);
  }
}
