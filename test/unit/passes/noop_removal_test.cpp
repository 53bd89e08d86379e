#include "compiler/ir/printer.h"
#include "compiler/passes/passes.h"

#include "test_graph.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::passes;
using namespace popc::passes::test;

TEST_CASE("no-op removal: Identity chain, output name kept", "[passes]") {
  ir::Ir ir = fromText(R"(graph main (opset 13) {
  input %x: f32[2,3]
  %a: f32[2,3] = Identity[name=id1](%x)
  %b: f32[2,3] = Relu[name=relu](%a)
  %y: f32[2,3] = Identity[name=id2](%b)
  output %y
}
)");
  CHECK(removeNoOps(ir) == 2);
  ir::inferGraph(ir.main);
  // The Relu reads the input and keeps the graph output's name; a and b are gone.
  CHECK(ir::printGraph(ir.main) == R"(graph main (opset 13) {
  input %x: f32[2,3]
  %y: f32[2,3] = Relu[name=relu](%x)
  output %y
}
)");
}

TEST_CASE("no-op removal: Identity from an input to an output stays", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {2});
  addOp(g, "Identity", "id", {"x"}, {"y"});
  g.outputs = {"y"};
  CHECK(removeNoOps(ir) == 0);
  CHECK(g.ops().size() == 1);
}

TEST_CASE("no-op removal: producer output also a graph output keeps the copy", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {2});
  addOp(g, "Relu", "relu", {"x"}, {"a"});
  addOp(g, "Identity", "id", {"a"}, {"y"});
  g.outputs = {"a", "y"};
  CHECK(removeNoOps(ir) == 0);
  CHECK(g.ops().size() == 2);
}

TEST_CASE("no-op removal: same-shape Reshape/Flatten, identity Transpose, Dropout", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {2, 3});
  addI64(g, "shape", {2}, {2, 3});
  addI64(g, "other", {2}, {3, 2});
  addOp(g, "Reshape", "same", {"x", "shape"}, {"a"});
  ir::Attributes perm;
  perm.set("perm", std::vector<int64_t>{0, 1});
  addOp(g, "Transpose", "tid", {"a"}, {"b"}, perm);
  addOp(g, "Dropout", "drop", {"b"}, {"c"});
  addOp(g, "Flatten", "flat", {"c"}, {"d"}); // [2,3] with axis 1 stays [2,3]
  addOp(g, "Reshape", "real", {"d", "other"}, {"e"});
  addOp(g, "Relu", "relu", {"e"}, {"y"});
  g.outputs = {"y"};

  CHECK(removeNoOps(ir) == 4);
  ir::inferGraph(g);
  CHECK(opTypes(g) == std::vector<std::string>{"Reshape", "Relu"});
  CHECK(g.ops()[0]->inputs[0] == "x");
}

TEST_CASE("no-op removal: Dropout with a used mask stays", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {4});
  addOp(g, "Dropout", "drop", {"x"}, {"y", "mask"});
  g.outputs = {"y", "mask"};
  CHECK(removeNoOps(ir) == 0);
}

TEST_CASE("no-op removal: renamed producer keeps its other readers", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {2, 3});
  addI64(g, "shape", {2}, {2, 3});
  addOp(g, "Relu", "relu", {"x"}, {"a"});
  addOp(g, "Tanh", "side", {"a"}, {"s"});
  addOp(g, "Reshape", "same", {"a", "shape"}, {"y"});
  g.outputs = {"s", "y"};
  CHECK(removeNoOps(ir) == 1);
  ir::inferGraph(g);
  REQUIRE(opTypes(g) == std::vector<std::string>{"Relu", "Tanh"});
  CHECK(g.ops()[0]->outputs[0] == "y");
  CHECK(g.ops()[1]->inputs[0] == "y");
  CHECK(g.outputs == std::vector<std::string>{"s", "y"});
}
