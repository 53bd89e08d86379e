#include "compiler/graph/serialize.h"
#include "test/unit/graph/small_target.h"

#include "formats/popef/popef.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::graph;

namespace {

// 64 floats spread over tiles 0-3 (16 each) gathered, every fourth one, into
// a temporary on tile 3; the copies come in reverse order.
DeviceGraph stridedGather() {
  DeviceGraph g(test::smallTarget(4, 4096));
  const TensorId src = g.addTensor("src", DType::F32, {64}, TensorRole::Input);
  const TensorId dst = g.addTensor("dst", DType::F32, {16}, TensorRole::Output);
  g.mapLinearly(src, 0, 4, 1, 16);
  g.mapToTile(dst, 3);
  const uint32_t ex = g.addExchange("gather");
  for (uint64_t k = 16; k-- > 0;)
    g.exchange(ex).copies.push_back({src, k * 16, dst, k * 4, 4});
  g.main().children.push_back(Program::exchange(ex));
  return g;
}

} // namespace

TEST_CASE("copies are written sorted by destination, folded into one strided record per source tile", "[serialize]") {
  DeviceGraph g = stridedGather();
  const MemoryPlan plan = planMemory(g);
  const ExecutableCode code;
  const std::vector<uint8_t> bytes = serializeExecutable(g, plan, code, {});
  // (Read without the loader's checks, which want vertex code.)
  const auto *step = ::popef::fb::GetExecutable(bytes.data())->exchanges()->Get(0);
  CHECK(step->placements()->size() == 1); // one gather onto tile 3
  const std::vector<::popef::fb::Copy> copies = popc::popef::stepCopies(*step);
  REQUIRE(copies.size() == 4);
  for (uint32_t i = 0; i < copies.size(); ++i) {
    const auto *c = &copies[i];
    CHECK(c->src_tile() == i);
    CHECK(c->dst_tile() == 3);
    CHECK(c->bytes() == 4);
    CHECK(popc::popef::copyCount(*c) == 4);
    CHECK(c->src_stride() == 16);
    CHECK(c->dst_stride() == 4);
    if (i > 0)
      CHECK(c->dst_offset() == copies[i - 1].dst_offset() + 16);
  }
}

TEST_CASE("the consuming serializeExecutable writes the same bytes and releases the graph's copies", "[serialize]") {
  DeviceGraph kept = stridedGather(), consumed = stridedGather();
  const MemoryPlan plan = planMemory(kept);
  const ExecutableCode code;
  const std::vector<uint8_t> a = serializeExecutable(kept, plan, code, {});
  const std::vector<uint8_t> b = serializeExecutable(std::move(consumed), plan, code, {});
  CHECK(a == b);
  CHECK(kept.exchanges()[0].copies.size() == 16);
  CHECK(consumed.exchanges()[0].copies.empty()); // NOLINT(bugprone-use-after-move): documented
  CHECK(consumed.tensors().size() == kept.tensors().size());
}
