// Graph API: control programs run on the simulated IPU (If, RepeatWhileTrue,
// Switch, Repeat, Call, PrintTensor, streams), popops/poplin/popnn values,
// and the popef running outside the API (runtime::Engine::run, as poprun-lite).
#include <popc/Engine.hpp>
#include <popc/popnn.hpp>
#include <popc/popops.hpp>
#include <popc/poplin.hpp>

#include "formats/popef/popef.h"
#include "runtime/engine.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace popc::api;
using namespace popc::api::program;

namespace {
Graph smallGraph() { return Graph(Target::createIPUTarget(1, "ipu2", 16)); }

template <typename T> std::vector<T> read(Engine &e, const std::string &h, std::size_t n) {
  std::vector<T> v(n);
  e.readTensor(h, v.data());
  return v;
}
} // namespace

TEST_CASE("RepeatWhileTrue counts on the device", "[api]") {
  Graph graph = smallGraph();
  Tensor i = graph.addVariable(INT, {1}, "i");
  Tensor acc = graph.addVariable(FLOAT, {1}, "acc");
  graph.setTileMapping(i, 0);
  graph.setTileMapping(acc, 1);
  graph.setInitialValue(i, std::vector<int>{0});
  graph.setInitialValue(acc, std::vector<float>{0});
  Tensor five = graph.addConstant(INT, {1}, 5);
  Tensor one = graph.addConstant(INT, {1}, 1);
  Tensor two = graph.addConstant(FLOAT, {1}, 2.0f);
  graph.setTileMapping(five, 0);
  graph.setTileMapping(one, 0);
  graph.setTileMapping(two, 1);
  Sequence cond;
  Tensor pred = popops::lt(graph, i, five, cond, "i<5");
  Sequence body;
  popops::addInPlace(graph, i, one, body, "i+=1");
  popops::addInPlace(graph, acc, two, body, "acc+=2");
  graph.createHostRead("i", i);
  graph.createHostRead("acc", acc);
  Engine engine(graph, RepeatWhileTrue(cond, pred, body));
  engine.run(0);
  CHECK(read<int>(engine, "i", 1) == std::vector<int>{5});
  CHECK(read<float>(engine, "acc", 1) == std::vector<float>{10});
}

TEST_CASE("If and Switch choose on a device value", "[api]") {
  Graph graph = smallGraph();
  Tensor sel = graph.addVariable(INT, {2}, "sel"); // the control is a view: sel[1]
  Tensor out = graph.addVariable(FLOAT, {2}, "out");
  mapLinearly(graph, sel);
  graph.setTileMapping(out, 2);
  graph.createHostWrite("sel", sel);
  graph.createHostRead("out", out);
  auto k = [&](float v) {
    Tensor c = graph.addConstant(FLOAT, {2}, v);
    graph.setTileMapping(c, 3);
    return c;
  };
  Switch sw(sel[1]);
  sw.add(0, Copy(k(10), out)).add(7, Copy(k(70), out)).setDefault(Copy(k(-1), out));
  Sequence ifProg;
  ifProg.add(If(sel[0], Copy(k(1), out), Copy(k(2), out)));
  Engine engine(graph, {sw, ifProg});
  auto runWith = [&](int a, int b, unsigned prog) {
    int h[2] = {a, b};
    engine.writeTensor("sel", h);
    engine.run(prog);
    return read<float>(engine, "out", 2)[0];
  };
  CHECK(runWith(0, 0, 0) == 10);
  CHECK(runWith(0, 7, 0) == 70);
  CHECK(runWith(0, 3, 0) == -1);
  CHECK(runWith(1, 0, 1) == 1);
  CHECK(runWith(0, 0, 1) == 2);
  CHECK_THROWS_WITH(If(graph.addVariable(FLOAT, {2}, "wide"), Sequence()), Catch::Contains("one element"));
}

TEST_CASE("Repeat, Call, PrintTensor and streams", "[api]") {
  Graph graph = smallGraph();
  Tensor v = graph.addVariable(FLOAT, {2, 2}, "v");
  mapLinearly(graph, v);
  DataStream in = graph.addHostToDeviceFIFO("in", FLOAT, 4);
  DataStream out = graph.addDeviceToHostFIFO("out", FLOAT, 4);
  Sequence doubleIt;
  popops::addInPlace(graph, v, v, doubleIt, "double");
  Function f = graph.addFunction(doubleIt);
  Sequence prog{Copy(in, v), Repeat(3, Call(f)), PrintTensor("v", v), PrintTensor("row", v[1]), Copy(v, out)};
  Engine engine(graph, prog);
  std::vector<std::string> printed;
  engine.setPrintHandler([&](const std::string &s) { printed.push_back(s); });
  std::vector<float> hin = {1, 2, 3, 4, 5, 6, 7, 8}, hout(8);
  engine.connectStream("in", hin.data(), hin.data() + hin.size());
  engine.connectStream("out", hout.data(), hout.data() + hout.size());
  engine.run(0);
  engine.run(0); // the circular buffers move on
  CHECK(hout == std::vector<float>{8, 16, 24, 32, 40, 48, 56, 64});
  REQUIRE(printed.size() == 4);
  CHECK(printed[0] == "v: {\n {8,16},\n {24,32}\n}");
  CHECK(printed[1] == "row: {24,32}");
  CHECK(printed[3] == "row: {56,64}");
}

TEST_CASE("popops, poplin and popnn compute the same values as the host", "[api]") {
  Graph graph = smallGraph();
  Tensor a = graph.addConstant<float>(FLOAT, {2, 3}, {1, -2, 3, -4, 5, -6}, "a");
  Tensor b = graph.addConstant<float>(FLOAT, {3, 2}, {1, 2, 3, 4, 5, 6}, "b");
  mapLinearly(graph, a);
  mapLinearly(graph, b);
  Sequence prog;
  Tensor mm = poplin::matMul(graph, a, b, prog);                                 // [[10,12],[-19,-24]]
  Tensor relu = popnn::nonLinearity(graph, popnn::NonLinearityType::RELU, a, prog);
  Tensor rowSum = popops::reduce(graph, a, {1}, popops::Operation::ADD, prog); // [2,-5]
  Tensor colMax = popops::reduce(graph, a, {0}, popops::Operation::MAX, prog); // [1,5,3]
  Tensor t = popops::add(graph, a, b.transpose(), prog);                          // a + b^T
  Tensor asInt = popops::cast(graph, a, INT, prog);
  Tensor filled = graph.addVariable(FLOAT, {3}, "filled");
  graph.setTileMapping(filled, 5);
  popops::fill(graph, filled, 2.5, prog);
  Tensor sm = popnn::nonLinearity(graph, popnn::NonLinearityType::SOFTMAX, b, prog);
  Tensor pooled = popnn::maxPool(graph, b.reshape({1, 1, 3, 2}), {{1, 2}, {1, 2}, {0, 0, 0, 0}}, prog);
  for (auto [name, tensor] : std::vector<std::pair<std::string, Tensor>>{
           {"mm", mm}, {"relu", relu}, {"rowSum", rowSum}, {"colMax", colMax}, {"t", t}, {"asInt", asInt},
           {"filled", filled}, {"sm", sm}, {"pooled", pooled}})
    graph.createHostRead(name, tensor);
  Engine engine(graph, prog);
  engine.run(0);
  CHECK(read<float>(engine, "mm", 4) == std::vector<float>{10, 12, -19, -24});
  CHECK(read<float>(engine, "relu", 6) == std::vector<float>{1, 0, 3, 0, 5, 0});
  CHECK(read<float>(engine, "rowSum", 2) == std::vector<float>{2, -5});
  CHECK(read<float>(engine, "colMax", 3) == std::vector<float>{1, 5, 3});
  CHECK(read<float>(engine, "t", 6) == std::vector<float>{2, 1, 8, -2, 9, 0});
  CHECK(read<int>(engine, "asInt", 6) == std::vector<int>{1, -2, 3, -4, 5, -6});
  CHECK(read<float>(engine, "filled", 3) == std::vector<float>{2.5, 2.5, 2.5});
  auto s = read<float>(engine, "sm", 6);
  CHECK(s[0] == Approx(1 / (1 + std::exp(1.0f))));
  CHECK(s[0] + s[1] == Approx(1));
  CHECK(read<float>(engine, "pooled", 3) == std::vector<float>{2, 4, 6});
}

TEST_CASE("a graph API popef runs without the API (poprun-lite path)", "[api]") {
  Graph graph = smallGraph();
  Tensor v = graph.addVariable(FLOAT, {4}, "v");
  mapLinearly(graph, v);
  DataStream in = graph.addHostToDeviceFIFO("x", FLOAT, 4);
  DataStream out = graph.addDeviceToHostFIFO("y", FLOAT, 4);
  Sequence prog{Copy(in, v)};
  Tensor sq = popops::square(graph, v, prog);
  prog.add(Copy(sq, out));
  std::vector<uint8_t> bytes = compileGraph(graph, {prog});
  popc::runtime::Engine engine(popc::popef::Executable::fromBytes(bytes, "api.popef"));
  popc::runtime::HostTensor x{popc::DType::F32, {4}, std::vector<uint8_t>(16)};
  const float xs[4] = {1, -2, 3, 0.5f};
  std::memcpy(x.data.data(), xs, 16);
  auto result = engine.run({{"x", x}});
  float ys[4];
  std::memcpy(ys, result.at("y").data.data(), 16);
  CHECK(std::vector<float>(ys, ys + 4) == std::vector<float>{1, 4, 9, 0.25f});
  // Same graph, same bytes (deterministic).
  CHECK(compileGraph(graph, {prog}) == bytes);
}
