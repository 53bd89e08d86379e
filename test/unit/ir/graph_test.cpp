#include "ir_test_util.h"

using namespace popc;
using namespace popc::ir;
using namespace popc::ir::test;
using Catch::Matchers::Contains;

TEST_CASE("Graph tensors and unique names", "[ir]") {
  Graph g;
  addInput(g, "x", {2, 3});
  CHECK(g.hasTensor("x"));
  CHECK_THROWS_WITH(addInput(g, "x", {1}), Contains("already exists"));
  CHECK(g.uniqueName("x") == "x_1");
  CHECK(g.uniqueName("z") == "z");
  CHECK_THROWS_WITH(g.tensor("nope"), Contains("no tensor named 'nope'"));
}

TEST_CASE("Graph producer, consumers, replaceAllUses", "[ir]") {
  Graph g;
  addInput(g, "x", {4});
  g.appendOp(makeOp("Relu", "r1", {"x"}, {"a"}));
  g.appendOp(makeOp("Relu", "r2", {"a"}, {"b"}));
  g.appendOp(makeOp("Add", "add", {"a", "b"}, {"c"}));
  g.outputs = {"c"};
  inferGraph(g);
  CHECK(g.producer("a") == size_t(0));
  CHECK_FALSE(g.producer("x").has_value());
  CHECK(g.consumers("a") == std::vector<size_t>{1, 2});
  g.replaceAllUses("c", "b");
  CHECK(g.outputs == std::vector<std::string>{"b"});
  g.insertOpBefore(0, makeOp("Identity", "id", {"x"}, {"x2"}));
  CHECK(g.ops()[0]->name == "id");
  g.removeOp(0);
  CHECK(g.ops()[0]->name == "r1");
}

TEST_CASE("inferGraph catches use before definition and duplicates", "[ir]") {
  Graph g;
  addInput(g, "x", {4});
  g.appendOp(makeOp("Relu", "r2", {"a"}, {"b"}));
  g.appendOp(makeOp("Relu", "r1", {"x"}, {"a"}));
  CHECK_THROWS_WITH(inferGraph(g), Contains("Relu 'r2': input 0 'a' is used before it is produced"));

  Graph h;
  addInput(h, "x", {4});
  h.appendOp(makeOp("Relu", "r", {"x"}, {"a"}));
  h.appendOp(makeOp("Relu", "r", {"a"}, {"b"}));
  CHECK_THROWS_WITH(inferGraph(h), Contains("op name 'r' is used twice"));

  Graph k;
  addInput(k, "x", {4});
  k.appendOp(makeOp("Relu", "r", {"x"}, {"a"}));
  k.outputs = {"zz"};
  CHECK_THROWS_WITH(inferGraph(k), Contains("output 'zz' is not produced"));
}

TEST_CASE("unsupported op and wrong input counts name the op", "[ir]") {
  Graph g;
  addInput(g, "x", {4});
  CHECK_THROWS_WITH(infer(g, makeOp("Unique", "l1", {"x"})), "Unique 'l1': unsupported operator");
  Graph h;
  addInput(h, "x", {4});
  CHECK_THROWS_WITH(infer(h, makeOp("Add", "a1", {"x"})), "Add 'a1': expects 2 inputs, got 1");
}

TEST_CASE("output cannot overwrite a graph input", "[ir]") {
  Graph g;
  addInput(g, "x", {4});
  CHECK_THROWS_WITH(infer(g, makeOp("Relu", "r", {"x"}, {"x"})), Contains("already a graph input"));
}

TEST_CASE("broadcastShapes follows numpy", "[ir]") {
  CHECK(broadcastShapes({2, 3, 4}, {4}) == Shape{2, 3, 4});
  CHECK(broadcastShapes({2, 1, 4}, {3, 1}) == Shape{2, 3, 4});
  CHECK(broadcastShapes({}, {5}) == Shape{5});
  CHECK(broadcastShapes({1}, {0}) == Shape{0});
  CHECK_THROWS_WITH(broadcastShapes({2, 3}, {4}), Contains("[2,3] and [4] are not broadcastable"));
}

TEST_CASE("Tensor data conversion", "[ir]") {
  Tensor t = makeConst("c", {1, -2, 3});
  CHECK(t.toInt64s() == std::vector<int64_t>{1, -2, 3});
  CHECK(t.toDoubles() == std::vector<double>{1, -2, 3});
  Tensor h;
  h.name = "h";
  h.kind = TensorKind::Constant;
  h.info = {DType::F16, {3}};
  uint16_t bits[] = {0x3c00, 0xc000, 0x3800}; // 1, -2, 0.5
  h.data.resize(6);
  std::memcpy(h.data.data(), bits, 6);
  CHECK(h.toDoubles() == std::vector<double>{1, -2, 0.5});
  Tensor bad = t;
  bad.data.resize(3);
  CHECK_THROWS_WITH(bad.toInt64s(), Contains("holds 3 bytes, expected 24"));
}
