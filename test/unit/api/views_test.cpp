// Graph API: tensor views (element regions), tile mappings, host handles.
#include <popc/Engine.hpp>
#include <popc/Graph.hpp>

#include <catch2/catch.hpp>

#include <numeric>

using namespace popc::api;
using namespace popc::api::program;

namespace {
// Element indices (of variable var) a view selects, in order.
std::vector<uint64_t> elems(const Tensor &t) {
  std::vector<uint64_t> out;
  for (const Region &r : t.regions())
    for (uint64_t i = 0; i < r.count; ++i)
      out.push_back(r.begin + i);
  return out;
}
} // namespace

TEST_CASE("views select the right elements", "[api]") {
  Tensor m(0, FLOAT, {3, 4}); // elements 0..11 of variable 0
  CHECK(elems(m[1]) == std::vector<uint64_t>{4, 5, 6, 7});
  CHECK(m[1].shape() == std::vector<std::size_t>{4});
  CHECK(elems(m.slice({1, 1}, {3, 3})) == std::vector<uint64_t>{5, 6, 9, 10});
  CHECK(elems(m.slice(2, 4, 1)) == std::vector<uint64_t>{2, 3, 6, 7, 10, 11});
  CHECK(elems(m.transpose()) == std::vector<uint64_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  CHECK(m.transpose().shape() == std::vector<std::size_t>{4, 3});
  CHECK(elems(m.reshape({6, 2})[5]) == std::vector<uint64_t>{10, 11});
  CHECK(elems(m.flatten().slice(3, 6)) == std::vector<uint64_t>{3, 4, 5});
  CHECK(elems(m.reverse(1)[0]) == std::vector<uint64_t>{3, 2, 1, 0});
  CHECK(elems(m.index({2, 3})) == std::vector<uint64_t>{11});
  CHECK(m.dimShuffle({1, 0}).regions() == m.transpose().regions());
  // A contiguous view is one region.
  CHECK(m.slice(1, 3).regions().size() == 1);

  Tensor a(0, FLOAT, {2, 2}), b(1, FLOAT, {2, 1});
  Tensor c = concat(a, b, 1);
  CHECK(c.shape() == std::vector<std::size_t>{2, 3});
  REQUIRE(c.regions().size() == 4);
  CHECK(c.regions()[0] == Region{0, 0, 2});
  CHECK(c.regions()[1] == Region{1, 0, 1});
  CHECK(c.regions()[2] == Region{0, 2, 2});
  CHECK(c.regions()[3] == Region{1, 1, 1});

  CHECK_THROWS_WITH(m.slice({0, 0}, {4, 1}), Catch::Contains("out of range"));
  CHECK_THROWS_WITH(m.reshape({5}), Catch::Contains("12 elements"));
  CHECK_THROWS_WITH(concat(a, Tensor(2, INT, {2, 1}), 1), Catch::Contains("does not match"));
}

TEST_CASE("tile mappings: per element, linear, read back", "[api]") {
  Graph graph(Target::createIPUTarget(1, "ipu2", 16));
  Tensor v = graph.addVariable(FLOAT, {4, 10}, "v");
  for (unsigned r = 0; r < 4; ++r)
    graph.setTileMapping(v[r], 3 - r);
  TileMapping m = graph.getTileMapping(v);
  REQUIRE(m.size() == 4);
  CHECK(m[3].size() == 1);
  CHECK(m[3][0].begin == 0);
  CHECK(m[3][0].end == 10);
  CHECK(m[0][0].begin == 30);
  // The transposed view's elements alternate over the tiles.
  TileMapping t = graph.getTileMapping(v.transpose());
  CHECK(t[3].size() == 10);

  Tensor w = graph.addVariable(INT, {100}, "w");
  mapLinearly(graph, w, 10);
  TileMapping lin = graph.getTileMapping(w);
  REQUIRE(lin.size() == 10);
  for (unsigned tile = 0; tile < 10; ++tile) {
    REQUIRE(lin[tile].size() == 1);
    CHECK(lin[tile][0].begin == tile * 10);
    CHECK(lin[tile][0].size() == 10);
  }
  CHECK_THROWS_WITH(graph.setTileMapping(w, 16), Catch::Contains("tile 16 does not exist"));
}

TEST_CASE("engine writes and reads whole variables and views", "[api]") {
  Graph graph(Target::createIPUTarget(1, "ipu2", 8));
  Tensor v = graph.addVariable(FLOAT, {3, 4}, "v");
  mapLinearly(graph, v, 2);
  Tensor col = v.slice(1, 2, 1); // column 1, on three tiles
  graph.createHostWrite("v", v);
  graph.createHostRead("vr", v);
  CHECK_THROWS_WITH(graph.createHostRead("v", v), Catch::Contains("already a write handle"));
  graph.createHostRead("col", col);
  graph.createHostWrite("colw", col);
  Engine engine(graph, Sequence());
  std::vector<float> h(12);
  std::iota(h.begin(), h.end(), 0.0f);
  engine.writeTensor("colw", std::vector<float>{-1, -2, -3}.data());
  std::vector<float> c(3);
  engine.readTensor("col", c.data());
  CHECK(c == std::vector<float>{-1, -2, -3});
  std::vector<float> back(12);
  engine.readTensor("vr", back.data());
  CHECK(back[1] == -1);
  CHECK(back[5] == -2);
  CHECK(back[9] == -3);
  CHECK_THROWS_WITH(engine.readTensor("nope", back.data()), Catch::Contains("no host handle 'nope'"));
}

TEST_CASE("compile errors name the tensor or the field", "[api]") {
  Graph graph(Target::createIPUTarget(1, "ipu2", 4));
  Tensor v = graph.addVariable(FLOAT, {4}, "unmapped");
  Sequence prog;
  prog.add(PrintTensor("v", v));
  CHECK_THROWS_WITH(Engine(graph, prog), Catch::Contains("'unmapped' has no tile mapping"));
  CHECK_THROWS_WITH(Copy(v, graph.addVariable(INT, {4}, "i")), Catch::Contains("differ in type"));
}
