#include "ir_test_util.h"

#include "compiler/ir/elementwise_shapes.h"

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

namespace {
Op withAttr(Op op, const std::string &name, AttrValue v) {
  op.attrs.set(name, std::move(v));
  return op;
}
} // namespace

TEST_CASE("comparisons, logical ops and IsNaN/IsInf produce bool", "[ir]") {
  Graph g;
  addInput(g, "a", {2, 1});
  addInput(g, "b", {3});
  addInput(g, "p", {2, 3}, DType::Bool);
  addInput(g, "q", {3}, DType::Bool);
  addInput(g, "i", {2, 3}, DType::I32);
  for (const char *type : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"}) {
    TensorInfo info = infer(g, makeOp(type, std::string("c_") + type, {"a", "b"}, {std::string("o_") + type}));
    CHECK(info == TensorInfo{DType::Bool, {2, 3}});
  }
  CHECK(infer(g, makeOp("Equal", "eqb", {"p", "q"}, {"eqb"})).dtype == DType::Bool);
  CHECK_THROWS_WITH(infer(g, makeOp("Less", "lb", {"p", "q"}, {"lb"})), Contains("bool inputs are not supported"));
  CHECK(infer(g, makeOp("And", "and", {"p", "q"}, {"and"})) == TensorInfo{DType::Bool, {2, 3}});
  CHECK(infer(g, makeOp("Not", "not", {"p"}, {"not"})).dtype == DType::Bool);
  CHECK_THROWS_WITH(infer(g, makeOp("Or", "or", {"i", "i"}, {"or"})), Contains("inputs must be bool, got int32"));
  CHECK(infer(g, makeOp("IsNaN", "nan", {"a"}, {"nan"})) == TensorInfo{DType::Bool, {2, 1}});
  CHECK_THROWS_WITH(infer(g, makeOp("IsInf", "inf", {"i"}, {"inf"})), Contains("must be float16/float32/float64"));
}

TEST_CASE("Where broadcasts three ways, Cast and CastLike set the type", "[ir]") {
  Graph g;
  addInput(g, "c", {2, 1, 1}, DType::Bool);
  addInput(g, "x", {1, 3, 1}, DType::I64);
  addInput(g, "y", {4}, DType::I64);
  addInput(g, "f", {4});
  CHECK(infer(g, makeOp("Where", "w", {"c", "x", "y"}, {"w"})) == TensorInfo{DType::I64, {2, 3, 4}});
  CHECK_THROWS_WITH(infer(g, makeOp("Where", "w2", {"x", "x", "y"}, {"w2"})),
                    Contains("condition (input 0) must be bool, got int64"));
  CHECK_THROWS_WITH(infer(g, makeOp("Where", "w3", {"c", "x", "f"}, {"w3"})),
                    Contains("X and Y must have the same type"));
  CHECK(infer(g, withAttr(makeOp("Cast", "c1", {"f"}, {"c1"}), "to", int64_t(10))).dtype == DType::F16);
  CHECK(infer(g, withAttr(makeOp("Cast", "c2", {"f"}, {"c2"}), "to", std::string("INT8"))).dtype == DType::I8);
  CHECK(infer(g, withAttr(makeOp("Cast", "c3", {"f"}, {"c3"}), "to", int64_t(16))).dtype == DType::BF16);
  CHECK_THROWS_WITH(infer(g, withAttr(makeOp("Cast", "c4", {"f"}, {"c4"}), "to", int64_t(99))),
                    Contains("'to' = 99 is not an ONNX element type"));
  CHECK(infer(g, makeOp("CastLike", "cl", {"f", "x"}, {"cl"})) == TensorInfo{DType::I64, {4}});
}

TEST_CASE("Pow, Mod, BitShift, Mean, Clip type rules", "[ir]") {
  Graph g;
  addInput(g, "f", {2, 3});
  addInput(g, "e", {3}, DType::I64);
  addInput(g, "i", {2, 3}, DType::I32);
  addInput(g, "u", {3}, DType::U8);
  addInput(g, "s", {}, DType::I32);
  CHECK(infer(g, makeOp("Pow", "p1", {"f", "e"}, {"p1"})) == TensorInfo{DType::F32, {2, 3}});
  CHECK(infer(g, makeOp("Pow", "p2", {"i", "f"}, {"p2"})) == TensorInfo{DType::I32, {2, 3}});
  CHECK(infer(g, withAttr(makeOp("Mod", "m1", {"i", "i"}, {"m1"}), "fmod", int64_t(1))).dtype == DType::I32);
  CHECK_THROWS_WITH(infer(g, withAttr(makeOp("Mod", "m2", {"i", "i"}, {"m2"}), "fmod", int64_t(2))),
                    Contains("'fmod' must be 0 or 1"));
  CHECK(infer(g, withAttr(makeOp("BitShift", "b1", {"u", "u"}, {"b1"}), "direction", std::string("LEFT"))).dtype ==
        DType::U8);
  CHECK_THROWS_WITH(infer(g, withAttr(makeOp("BitShift", "b2", {"u", "u"}, {"b2"}), "direction", std::string("UP"))),
                    Contains("'direction' must be"));
  CHECK_THROWS_WITH(infer(g, makeOp("BitShift", "b3", {"f", "f"}, {"b3"})), Contains("must be integers"));
  CHECK(infer(g, makeOp("Mean", "mean", {"f", "f", "f"}, {"mean"})).shape == Shape{2, 3});
  CHECK_THROWS_WITH(infer(g, makeOp("Mean", "mi", {"i", "i"}, {"mi"})), Contains("must be float16/float32/float64"));
  CHECK(infer(g, makeOp("Clip", "ci", {"i", "s", "s"}, {"ci"})).dtype == DType::I32);
  CHECK_THROWS_WITH(infer(g, makeOp("Clip", "cf", {"f", "s"}, {"cf"})), Contains("must have the same type"));
  CHECK(infer(g, makeOp("Sign", "sg", {"i"}, {"sg"})).dtype == DType::I32);
}

TEST_CASE("opset < 7 broadcast attributes and per-channel PRelu slopes", "[ir]") {
  Graph g;
  g.opset = 6;
  addInput(g, "a", {2, 3, 4});
  addInput(g, "c", {3});
  addInput(g, "r", {2, 1});
  CHECK(inferShape(g, withAttr(withAttr(makeOp("Add", "add", {"a", "c"}, {"add"}), "broadcast", int64_t(1)), "axis",
                               int64_t(1))) == Shape{2, 3, 4});
  CHECK_THROWS_WITH(inferShape(g, withAttr(withAttr(makeOp("Mul", "mul", {"a", "c"}, {"mul"}), "broadcast",
                                                    int64_t(1)),
                                           "axis", int64_t(2))),
                    Contains("does not broadcast to A [2,3,4]"));
  CHECK_THROWS_WITH(inferShape(g, withAttr(makeOp("Sub", "sub", {"a", "r"}, {"sub"}), "axis", int64_t(0))),
                    Contains("'axis' needs broadcast=1"));
  CHECK(inferShape(g, makeOp("PRelu", "pr", {"a", "c"}, {"pr"})) == Shape{2, 3, 4});
  Graph h; // opset 13: numpy broadcasting first; per channel only when that cannot apply
  addInput(h, "a", {2, 3, 4});
  addInput(h, "b", {2, 3, 3});
  addInput(h, "c", {3});
  addInput(h, "d", {2});
  CHECK(elementwiseOperandShape(h.appendOp(makeOp("PRelu", "p1", {"a", "c"}, {"p1"})), h, 1) == Shape{3, 1});
  CHECK(elementwiseOperandShape(h.appendOp(makeOp("PRelu", "p2", {"b", "c"}, {"p2"})), h, 1) == Shape{3});
  CHECK_THROWS_WITH(infer(h, makeOp("PRelu", "p3", {"a", "d"}, {"p3"})), Contains("not broadcastable"));
}
