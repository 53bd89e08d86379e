// Resource limits of the runtime: the memory estimate poprun-lite checks
// against --max-memory, the stop flag behind --timeout, and skipJit.
#include "runtime/engine.h"
#include "runtime/device_memory.h"
#include "runtime/memory_budget.h"
#include "runtime/step_tables.h"
#include "support/error.h"
#include "test/unit/popef/sample_executable.h"
#include "test/unit/runtime/vertex_ir.h"

#include <catch2/catch.hpp>

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <atomic>
#include <cstring>

namespace fb = ::popef::fb;
using popc::runtime::Engine;
using popc::runtime::EngineOptions;

namespace {

std::shared_ptr<const popc::popef::Executable> sample(std::vector<uint8_t> bitcode) {
  return popc::popef::Executable::fromBytes(popc::popef::serialize(popc::test::makeSampleExecutable(std::move(bitcode))),
                                            "sample.popef");
}

popc::runtime::HostTensorMap inputs() {
  popc::runtime::HostTensor a{popc::DType::F32, {4}, std::vector<uint8_t>(16)};
  float v[4] = {1, 2, 3, 4};
  std::memcpy(a.data.data(), v, 16);
  return {{"a", a}};
}

} // namespace

TEST_CASE("memory estimate of the sample executable", "[runtime][limits]") {
  auto exe = sample({1, 2, 3, 4}); // the estimate never looks at the code
  auto e = popc::runtime::estimateMemory(*exe);
  // All four tiles are named; the arena maps a window of each tile's
  // tile_bytes_used (48, 48, 8, 8: the 4 KiB minimum each) and its limit
  // slot's line, in 4 KiB pages.
  CHECK(e.tilesUsed == 4);
  const std::vector<uint32_t> used = {48, 48, 8, 8};
  CHECK(e.device == popc::runtime::DeviceMemory::arenaBytes(used));
  CHECK(e.device == 5 * 4096); // 4 x (4096 + 128) bytes
  CHECK(e.host == 16 + 16);                   // input a, output out
  // 2 vertices; the exchange as planExchange holds it: its pieces and placements
  // (and, on this 2-IPU target, its records for the link).
  uint64_t exchangeTables = 0;
  for (uint32_t s = 0; s < popc::popef::len(exe->root().exchanges()); ++s) {
    const auto *step = exe->root().exchanges()->Get(s);
    exchangeTables += sizeof(popc::runtime::ExchangePlan) +
                      popc::popef::len(step->pieces()) * sizeof(popc::runtime::PieceOp) +
                      popc::popef::len(step->placements()) * sizeof(popc::runtime::PlacementOp);
    if (exe->root().target()->num_ipus() > 1) // the link's single copies, bounded by every record
      exchangeTables += popc::popef::stepRecordCount(*step) * sizeof(popc::runtime::RemoteCopy);
  }
  CHECK(popc::popef::len(exe->root().exchanges()) == 1);
  CHECK(e.tables == (2 * 16 + 16) + exchangeTables);
  CHECK_NOTHROW(popc::runtime::checkMemoryBudget(*exe, e.total()));
  CHECK_NOTHROW(popc::runtime::checkMemoryBudget(*exe, 0)); // 0 = no limit
  REQUIRE_THROWS_AS(popc::runtime::checkMemoryBudget(*exe, e.total() - 1), popc::Error);
  try {
    popc::runtime::checkMemoryBudget(*exe, 1000);
  } catch (const popc::Error &err) {
    CHECK_THAT(err.what(), Catch::Contains("sample.popef: running it needs about") &&
                               Catch::Contains("on 4 tiles") && Catch::Contains("more than --max-memory"));
  }
}

TEST_CASE("the stop flag ends a run between steps", "[runtime][limits]") {
  std::atomic<bool> stop{false};
  EngineOptions options;
  options.threads = 1;
  options.stop = &stop;
  Engine engine(sample(popc::test::sampleAddBitcode()), options);
  auto out = engine.run(inputs());
  std::vector<float> v(4);
  std::memcpy(v.data(), out.at("out").data.data(), 16);
  CHECK(v == std::vector<float>{11, 22, 33, 44});
  stop = true;
  CHECK_THROWS_AS(engine.run(inputs()), popc::runtime::Stopped);
  CHECK(engine.report().runs == 1);
  stop = false; // the engine stays usable
  CHECK(engine.run(inputs()).at("out").data == out.at("out").data);
}

TEST_CASE("skipJit builds the engine without code and refuses to run", "[runtime][limits]") {
  EngineOptions options;
  options.skipJit = true;
  Engine engine(sample({1, 2, 3, 4}), options); // not bitcode at all: never parsed
  CHECK(engine.describeInputs() == "a float32 [4]");
  CHECK_THROWS_AS(engine.run(inputs()), popc::Error);
}
