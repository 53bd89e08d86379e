#include "compiler/passes/passes.h"

#include "test_graph.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::passes;
using namespace popc::passes::test;

TEST_CASE("constant folding: Add → Reshape → Transpose → Concat chain folds", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {4, 2});
  addF32(g, "a", {2, 3}, {1, 2, 3, 4, 5, 6});
  addF32(g, "b", {3}, {10, 20, 30});
  addI64(g, "shape", {2}, {3, 2});
  addF32(g, "extra", {1, 2}, {-1, -2});
  addOp(g, "Add", "add", {"a", "b"}, {"sum"});               // [[11,22,33],[14,25,36]]
  addOp(g, "Reshape", "reshape", {"sum", "shape"}, {"r"});   // [[11,22],[33,14],[25,36]]
  ir::Attributes perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  addOp(g, "Transpose", "transpose", {"r"}, {"t"}, perm);   // [[11,33,25],[22,14,36]]
  ir::Attributes axis0;
  axis0.set("axis", int64_t(0));
  addOp(g, "Transpose", "transpose2", {"t"}, {"t2"}, perm); // back to [3,2]
  addOp(g, "Concat", "concat", {"t2", "extra"}, {"c"}, axis0); // [4,2]
  addOp(g, "Mul", "mul", {"x", "c"}, {"y"});
  g.outputs = {"y"};

  CHECK(foldConstants(ir) == 5);
  ir::inferGraph(g);
  REQUIRE(opTypes(g) == std::vector<std::string>{"Mul"});
  const ir::Tensor &c = g.tensor("c");
  CHECK(c.kind == ir::TensorKind::Constant);
  CHECK(c.info.shape == Shape{4, 2});
  CHECK(values<float>(c) == std::vector<float>{11, 22, 33, 14, 25, 36, -1, -2});
}

TEST_CASE("constant folding: ops reading a graph input stay", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {3});
  addF32(g, "a", {3}, {1, 2, 3});
  addOp(g, "Add", "add", {"x", "a"}, {"y"});
  g.outputs = {"y"};
  CHECK(foldConstants(ir) == 0);
  CHECK(g.ops().size() == 1);
}

TEST_CASE("constant folding: Constant op becomes a Constant tensor", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {2});
  ir::Attributes a;
  a.set("value_floats", std::vector<double>{0.5, 2});
  addOp(g, "Constant", "k", {}, {"k"}, a);
  addOp(g, "Mul", "mul", {"x", "k"}, {"y"});
  g.outputs = {"y"};
  CHECK(foldConstants(ir) == 1);
  CHECK(values<float>(g.tensor("k")) == std::vector<float>{0.5f, 2.0f});
  CHECK(opTypes(g) == std::vector<std::string>{"Mul"});
}

TEST_CASE("constant folding: Shape of a static input feeds a Reshape", "[passes]") {
  if (!ir::OpRegistry::instance().find("Shape") || !ir::OpRegistry::instance().find("Gather"))
    return; // the IR does not register Shape/Gather (yet)
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {2, 3, 4});
  addI64(g, "zero", {}, {0});
  addI64(g, "minus1", {1}, {-1});
  addI64(g, "axes", {1}, {0});
  addOp(g, "Shape", "shape", {"x"}, {"s"});
  addOp(g, "Gather", "gather", {"s", "zero"}, {"n"});
  addOp(g, "Unsqueeze", "unsq", {"n", "axes"}, {"n1"});
  ir::Attributes axis0;
  axis0.set("axis", int64_t(0));
  addOp(g, "Concat", "cat", {"n1", "minus1"}, {"newshape"}, axis0);
  addOp(g, "Reshape", "reshape", {"x", "newshape"}, {"y"});
  g.outputs = {"y"};
  CHECK(foldConstants(ir) == 4);
  CHECK(opTypes(g) == std::vector<std::string>{"Reshape"});
  CHECK(values<int64_t>(g.tensor("newshape")) == std::vector<int64_t>{2, -1});
}

TEST_CASE("constant folding: a folded graph output keeps its name", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {1});
  addF32(g, "a", {2, 2}, {1, 2, 3, 4});
  ir::Attributes perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  addOp(g, "Transpose", "t", {"a"}, {"y"}, perm);
  g.outputs = {"y"};
  CHECK(foldConstants(ir) == 1);
  ir::verifyGraph(g);
  CHECK(g.tensor("y").kind == ir::TensorKind::Constant);
  CHECK(values<float>(g.tensor("y")) == std::vector<float>{1, 3, 2, 4});
}
