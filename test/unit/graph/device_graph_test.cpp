#include "compiler/graph/device_graph.h"
#include "test/unit/graph/small_target.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::graph;
using popc::graph::test::smallTarget;

TEST_CASE("forArch knows ipu1 and ipu2 and rejects others", "[graph]") {
  CHECK(Target::forArch("ipu2").tilesPerIpu == 1472);
  CHECK(Target::forArch("ipu2").bytesPerTile == 624 * 1024);
  CHECK(Target::forArch("ipu1").tilesPerIpu == 1216);
  CHECK(Target::forArch("ipu1", 4).numTiles() == 4 * 1216);
  CHECK_THROWS_WITH(Target::forArch("ipu9"), Catch::Contains("ipu1 or ipu2"));
}

TEST_CASE("mapLinearly spreads whole grains over tiles and covers the tensor", "[graph]") {
  DeviceGraph g(smallTarget());
  TensorId t = g.addTensor("t", DType::F32, {100}, TensorRole::Intermediate);
  g.mapLinearly(t, 0, 8, 4, 8);
  const auto &m = g.tensor(t).mapping;
  REQUIRE(!m.empty());
  CHECK(m.front().begin == 0);
  CHECK(m.back().end == 400);
  for (size_t i = 0; i + 1 < m.size(); ++i) {
    CHECK(m[i].end == m[i + 1].begin);
    CHECK(m[i].begin % 16 == 0); // grain of 4 floats
  }
  CHECK(m.size() <= 8);
}

TEST_CASE("small tensors stay on few tiles", "[graph]") {
  DeviceGraph g(smallTarget());
  TensorId t = g.addTensor("t", DType::F32, {10}, TensorRole::Intermediate);
  g.mapLinearly(t, 0, 8, 1, 64);
  CHECK(g.tensor(t).mapping.size() == 1);
}

TEST_CASE("blocks concatenate a tensor's intervals per tile in order", "[graph]") {
  DeviceGraph g(smallTarget());
  TensorId t = g.addTensor("t", DType::U8, {40}, TensorRole::Intermediate);
  g.setMapping(t, {{0, 10, 1}, {10, 20, 2}, {20, 30, 1}, {30, 40, 2}});
  CHECK(g.locate(t, 0) == std::make_pair(1u, uint64_t(0)));
  CHECK(g.locate(t, 25) == std::make_pair(1u, uint64_t(15)));
  CHECK(g.locate(t, 35) == std::make_pair(2u, uint64_t(15)));
  auto sizes = g.blockSizes(t);
  REQUIRE(sizes.size() == 2);
  CHECK(sizes[0] == std::make_pair(1u, uint64_t(20)));
  CHECK(sizes[1] == std::make_pair(2u, uint64_t(20)));
}

TEST_CASE("adjacent intervals on one tile are merged", "[graph]") {
  DeviceGraph g(smallTarget());
  TensorId t = g.addTensor("t", DType::U8, {20}, TensorRole::Intermediate);
  g.setMapping(t, {{10, 20, 3}, {0, 10, 3}});
  REQUIRE(g.tensor(t).mapping.size() == 1);
  CHECK(g.tensor(t).mapping[0].end == 20);
}

TEST_CASE("a mapping that leaves a gap is an internal error", "[graph]") {
  DeviceGraph g(smallTarget());
  TensorId t = g.addTensor("t", DType::U8, {20}, TensorRole::Intermediate);
  CHECK_THROWS(g.setMapping(t, {{0, 10, 0}}));
  CHECK_THROWS(g.setMapping(t, {{0, 10, 0}, {12, 20, 0}}));
}

TEST_CASE("a tensor over 4 GiB is refused by name (copies address tensors with 32-bit offsets)", "[graph]") {
  DeviceGraph g(smallTarget());
  CHECK_NOTHROW(g.addTensor("fits", DType::U8, {int64_t(kMaxTensorBytes)}, TensorRole::Intermediate));
  CHECK_THROWS_WITH(g.addTensor("table", DType::F32, {1 << 20, 1 << 10}, TensorRole::Constant),
                    Catch::Contains("tensor 'table' needs 4294967296 bytes") &&
                        Catch::Contains("at most 4 GiB"));
}

TEST_CASE("an exchange step's copy list folds strided copies into runs and yields every copy in order", "[graph]") {
  std::vector<Copy> added;
  auto add = [&](TensorId src, uint64_t srcByte, TensorId dst, uint64_t dstByte, uint64_t bytes) {
    added.emplace_back(src, srcByte, dst, dstByte, bytes);
  };
  for (uint64_t i = 0; i < 5; ++i) // a column gathered into a row: one run
    add(1, 64 * i, 2, 4 * i, 4);
  for (uint64_t i = 0; i < 4; ++i) // backwards through the source: one run (strides modulo 2^32)
    add(1, 1000 - 8 * i, 2, 100 + 8 * i, 8);
  add(1, 0, 3, 0, 8);    // another destination: a run of its own
  add(1, 8, 3, 8, 16);   // another size
  add(1, 40, 3, 24, 16); // the second copy of a run sets its strides...
  add(1, 50, 3, 40, 16); // ...and one off them starts the next run
  add(2, UINT32_MAX - 3, 1, 0, 0); // offsets near the 32-bit limit, empty copies
  add(2, UINT32_MAX - 3, 1, 0, 0);
  add(2, UINT32_MAX - 3, 1, 0, 0);

  CopyList list;
  for (const Copy &c : added)
    list.push_back(c);
  CHECK(list.size() == added.size());
  CHECK(list.runs().size() == 6);
  std::vector<Copy> seen(list.begin(), list.end());
  REQUIRE(seen.size() == added.size());
  for (size_t i = 0; i < added.size(); ++i) {
    INFO("copy " << i);
    CHECK(seen[i].src == added[i].src);
    CHECK(seen[i].dst == added[i].dst);
    CHECK(seen[i].srcByte == added[i].srcByte);
    CHECK(seen[i].dstByte == added[i].dstByte);
    CHECK(seen[i].bytes == added[i].bytes);
  }
  list.release();
  CHECK(list.empty());
  CHECK(list.begin() == list.end());
}
