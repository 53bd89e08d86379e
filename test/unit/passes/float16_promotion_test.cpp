#include "compiler/passes/passes.h"
#include "test/unit/passes/test_graph.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::passes::test;

TEST_CASE("float16-promotion: a float16 MatMul accumulates in float32 between casts", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "a", {2, 3}, DType::F16);
  addInput(g, "b", {3, 4}, DType::F16);
  addOp(g, "MatMul", "mm", {"a", "b"}, {"y"});
  addOp(g, "Relu", "relu", {"y"}, {"z"});
  g.outputs = {"z"};
  CHECK(passes::promoteFloat16(ir) == 1);
  CHECK(opTypes(g) == std::vector<std::string>{"Cast", "Cast", "MatMul", "Cast", "Relu"});
  const ir::Op &mm = *g.ops()[2];
  CHECK(g.tensor(mm.inputs[0]).info.dtype == DType::F32);
  CHECK(g.tensor(mm.outputs[0]).info.dtype == DType::F32);
  CHECK(g.ops()[3]->outputs[0] == "y"); // the float16 result keeps its name
  CHECK(g.tensor("y").info.dtype == DType::F16);
  CHECK(g.ops()[4]->type == "Relu"); // elementwise stays float16
  CHECK(passes::promoteFloat16(ir) == 0); // nothing left to promote
}

TEST_CASE("float16-promotion: float32 ops are left alone, each float16 result of an op with several is cast back",
          "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "a", {2, 3});
  addInput(g, "b", {3, 4});
  addOp(g, "MatMul", "mm", {"a", "b"}, {"y"});
  addInput(g, "x", {1, 1, 4, 4}, DType::F16);
  ir::Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{2, 2});
  addOp(g, "MaxPool", "pool", {"x"}, {"p", "indices"}, pool);
  g.outputs = {"y", "p", "indices"};
  CHECK(passes::promoteFloat16(ir) == 1);
  CHECK(opTypes(g) == std::vector<std::string>{"MatMul", "Cast", "MaxPool", "Cast", "Identity"});
  CHECK(g.tensor("p").info.dtype == DType::F16);         // the values, cast back
  CHECK(g.tensor("indices").info.dtype == DType::I64);   // the indices, as they are
  CHECK(g.ops()[3]->outputs[0] == "p");
  CHECK(g.ops()[4]->outputs[0] == "indices");
}

TEST_CASE("float16-promotion: an op with an absent output is left alone", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {1, 1, 4, 4}, DType::F16);
  ir::Attributes pool;
  pool.set("kernel_shape", std::vector<int64_t>{2, 2});
  addOp(g, "MaxPool", "pool", {"x"}, {"", "indices"}, pool);
  g.outputs = {"indices"};
  CHECK(passes::promoteFloat16(ir) == 0);
}
