#include "ir_test_util.h"

using namespace popc;
using namespace popc::ir;
using namespace popc::ir::test;
using Catch::Matchers::Contains;

TEST_CASE("binary elementwise ops broadcast", "[ir]") {
  for (const char *type : {"Add", "Sub", "Mul", "Div"}) {
    Graph g;
    addInput(g, "a", {2, 1, 4});
    addInput(g, "b", {3, 1});
    CHECK(inferShape(g, makeOp(type, "n", {"a", "b"})) == Shape{2, 3, 4});
  }
}

TEST_CASE("binary elementwise errors", "[ir]") {
  Graph g;
  addInput(g, "a", {2, 3});
  addInput(g, "b", {4});
  addInput(g, "i", {2, 3}, DType::I32);
  CHECK_THROWS_WITH(infer(g, makeOp("Add", "add1", {"a", "b"})),
                    Contains("Add 'add1': shapes [2,3] and [4] are not broadcastable"));
  Graph h;
  addInput(h, "a", {2, 3});
  addInput(h, "i", {2, 3}, DType::I32);
  CHECK_THROWS_WITH(infer(h, makeOp("Mul", "m", {"a", "i"})),
                    "Mul 'm': input A and input B must have the same type, got float32 and int32");
}

TEST_CASE("unary activations", "[ir]") {
  Graph g;
  addInput(g, "x", {1, 5});
  addInput(g, "i", {1, 5}, DType::I32);
  CHECK(inferShape(g, makeOp("Relu", "r", {"x"}, {"r"})) == Shape{1, 5});
  CHECK(inferShape(g, makeOp("Sigmoid", "s", {"x"}, {"s"})) == Shape{1, 5});
  CHECK(inferShape(g, makeOp("Tanh", "t", {"x"}, {"t"})) == Shape{1, 5});
  CHECK(infer(g, makeOp("Identity", "id", {"i"}, {"id"})).dtype == DType::I32);
  CHECK_THROWS_WITH(infer(g, makeOp("Sigmoid", "s2", {"i"}, {"s2"})),
                    Contains("Sigmoid 's2': input must be float16/float32/float64, got int32"));
  g.opset = 13;
  CHECK_THROWS_WITH(infer(g, makeOp("Relu", "ri", {"i"}, {"ri"})), Contains("opset 13"));
  g.opset = 14;
  CHECK(infer(g, makeOp("Relu", "ri2", {"i"}, {"ri2"})).dtype == DType::I32);
}
