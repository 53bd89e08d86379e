#include "compiler/passes/passes.h"

#include "test_graph.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::passes;
using namespace popc::passes::test;

TEST_CASE("dead code elimination: unreachable ops and unused constants go", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {3});
  addInput(g, "unused_input", {3});
  addF32(g, "k", {3}, {1, 2, 3});
  addF32(g, "dead_k", {3}, {4, 5, 6});
  addF32(g, "orphan", {1}, {0});
  addOp(g, "Add", "live", {"x", "k"}, {"y"});
  addOp(g, "Mul", "dead1", {"x", "dead_k"}, {"d1"});
  addOp(g, "Relu", "dead2", {"d1"}, {"d2"});
  addOp(g, "Relu", "dead3", {"unused_input"}, {"d3"});
  g.outputs = {"y"};

  eliminateDeadCode(ir);
  ir::inferGraph(g);
  CHECK(opTypes(g) == std::vector<std::string>{"Add"});
  CHECK(g.hasTensor("x"));
  CHECK(g.hasTensor("unused_input")); // graph inputs are the interface
  CHECK(g.hasTensor("k"));
  for (const char *gone : {"dead_k", "orphan", "d1", "d2", "d3"})
    CHECK_FALSE(g.hasTensor(gone));
}

TEST_CASE("dead code elimination: tensors read by a subgraph are live", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {3});
  addOp(g, "Relu", "captured_producer", {"x"}, {"c"});
  addOp(g, "Relu", "out", {"x"}, {"y"});
  g.outputs = {"y"};
  ir::Graph body("body");
  addInput(body, "c", {3}); // stand-in: the body reads main's "c" by name
  addOp(body, "Relu", "inner", {"c"}, {"z"});
  ir.subgraphs.emplace("body", std::move(body));

  eliminateDeadCode(ir);
  CHECK(g.ops().size() == 2);
}
