#include "compiler/graph/memory_plan.h"
#include "test/unit/graph/small_target.h"

#include "support/error.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::graph;
using popc::graph::test::smallTarget;

namespace {

// Adds an exchange step copying all of `src` into `dst` to the main program.
void copyStep(DeviceGraph &g, TensorId src, TensorId dst) {
  uint32_t ex = g.addExchange("copy");
  g.exchange(ex).copies.push_back({src, 0, dst, 0, g.tensor(src).bytes});
  g.main().children.push_back(Program::exchange(ex));
}
} // namespace

TEST_CASE("tensors with disjoint lifetimes share memory", "[memory]") {
  DeviceGraph g(smallTarget(1, 4096));
  TensorId a = g.addTensor("a", DType::U8, {1000}, TensorRole::Intermediate);
  TensorId b = g.addTensor("b", DType::U8, {1000}, TensorRole::Intermediate);
  TensorId c = g.addTensor("c", DType::U8, {1000}, TensorRole::Intermediate);
  for (TensorId t : {a, b, c})
    g.mapToTile(t, 0);
  copyStep(g, a, b); // step 0: a, b live
  copyStep(g, b, c); // step 1: b, c live; a is dead and c can reuse it
  MemoryPlan plan = planMemory(g);
  CHECK(plan.base(c, 0) == plan.base(a, 0));
  CHECK(plan.base(b, 0) != plan.base(a, 0));
  CHECK(plan.tileBytesUsed[0] == 2000);
}

TEST_CASE("live tensors never overlap", "[memory]") {
  DeviceGraph g(smallTarget(1, 1 << 16));
  std::vector<TensorId> ts;
  for (int i = 0; i < 6; ++i) {
    ts.push_back(g.addTensor("t" + std::to_string(i), DType::F32, {int64_t(10 + i * 7)}, TensorRole::Intermediate));
    g.mapToTile(ts.back(), 0);
  }
  // One step touching everything: all live together.
  uint32_t ex = g.addExchange("all");
  for (size_t i = 0; i + 1 < ts.size(); ++i)
    g.exchange(ex).copies.push_back({ts[i], 0, ts[i + 1], 0, 4});
  g.main().children.push_back(Program::exchange(ex));
  MemoryPlan plan = planMemory(g);
  for (size_t i = 0; i < ts.size(); ++i)
    for (size_t j = i + 1; j < ts.size(); ++j) {
      const uint64_t ai = plan.base(ts[i], 0), aj = plan.base(ts[j], 0);
      const uint64_t si = g.tensor(ts[i]).bytes, sj = g.tensor(ts[j]).bytes;
      CHECK((ai + si <= aj || aj + sj <= ai));
    }
  CHECK(plan.base(ts[0], 0) % 8 == 0);
}

TEST_CASE("constants live for the whole program", "[memory]") {
  DeviceGraph g(smallTarget(1, 4096));
  TensorId k = g.addTensor("k", DType::U8, {100}, TensorRole::Constant);
  TensorId a = g.addTensor("a", DType::U8, {100}, TensorRole::Intermediate);
  TensorId b = g.addTensor("b", DType::U8, {100}, TensorRole::Intermediate);
  for (TensorId t : {k, a, b})
    g.mapToTile(t, 0);
  copyStep(g, a, b);
  MemoryPlan plan = planMemory(g);
  CHECK(plan.base(k, 0) != plan.base(a, 0));
  CHECK(plan.base(k, 0) != plan.base(b, 0));
}

TEST_CASE("a tile over budget fails with the out-of-memory report", "[memory]") {
  DeviceGraph g(smallTarget(2, 256));
  TensorId big = g.addTensor("weights_big", DType::F32, {100}, TensorRole::Constant);
  g.mapToTile(big, 1);
  try {
    planMemory(g);
    FAIL("expected out of memory");
  } catch (const Error &e) {
    const std::string msg = e.what();
    CHECK_THAT(msg, Catch::Contains("out of memory"));
    CHECK_THAT(msg, Catch::Contains("tile 1: 400 bytes"));
    CHECK_THAT(msg, Catch::Contains("weights_big (400 bytes)"));
  }
}
