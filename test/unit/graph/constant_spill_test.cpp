// ConstantSpill: a big model's constants in a temporary file while the
// schedule is packed; the executable's bytes must not change.
#include "compiler/graph/constant_spill.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/graph/serialize.h"
#include "test/unit/graph/small_target.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>

using namespace popc;
using namespace popc::graph;

namespace {

// Two constants (one odd-sized, so the file pads it) copied into an output.
DeviceGraph twoConstants() {
  DeviceGraph g(test::smallTarget(4, 1 << 16));
  const TensorId a = g.addTensor("a", DType::F32, {1000}, TensorRole::Constant);
  const TensorId b = g.addTensor("b", DType::I8, {37}, TensorRole::Constant);
  const TensorId out = g.addTensor("out", DType::F32, {1000}, TensorRole::Output);
  for (uint32_t i = 0; i < 4000; ++i)
    g.tensor(a).constData.push_back(uint8_t(i * 7));
  for (uint32_t i = 0; i < 37; ++i)
    g.tensor(b).constData.push_back(uint8_t(200 + i));
  g.mapLinearly(a, 0, 4, 1, 16);
  g.mapToTile(b, 1);
  g.mapLinearly(out, 0, 4, 1, 16);
  const uint32_t ex = g.addExchange("copy");
  g.exchange(ex).copies.push_back({a, 0, out, 0, 4000});
  g.main().children.push_back(Program::exchange(ex));
  return g;
}

std::vector<uint8_t> serialize(DeviceGraph &&g) {
  const MemoryPlan plan = planMemory(g);
  const ExecutableCode code;
  return serializeExecutable(std::move(g), plan, code, {});
}

} // namespace

TEST_CASE("spilled constants give the same executable, and the graph's bytes leave the heap", "[graph][spill]") {
  const std::vector<uint8_t> expected = serialize(twoConstants());
  DeviceGraph g = twoConstants();
  const std::vector<uint8_t> a = g.tensor(0).constData, b = g.tensor(1).constData;
  auto spill = ConstantSpill::spill(g, std::filesystem::temp_directory_path().string());
  REQUIRE(spill);
  CHECK(spill->bytes() == 4032 + 64); // each constant 64-byte aligned in the file
  CHECK(g.tensor(0).constData.empty());
  CHECK(std::vector<uint8_t>(g.tensor(0).constantBytes().begin(), g.tensor(0).constantBytes().end()) == a);
  CHECK(std::vector<uint8_t>(g.tensor(1).constantBytes().begin(), g.tensor(1).constantBytes().end()) == b);
  CHECK(g.tensor(2).constantBytes().empty());
  CHECK(serialize(std::move(g)) == expected); // the serializer drops the spilled pages as it copies them
}

TEST_CASE("a spill that cannot create its file leaves every constant where it was", "[graph][spill]") {
  DeviceGraph g = twoConstants();
  const std::vector<uint8_t> a = g.tensor(0).constData;
  CHECK_FALSE(ConstantSpill::spill(g, "/nonexistent-popc-dir"));
  CHECK(g.tensor(0).constData == a);
  CHECK(g.tensor(0).spilled.empty());
}
