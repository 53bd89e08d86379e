#include "compiler/ir/op_attrs.h"
#include "ir_test_util.h"

#include <cstring>

using namespace popc;
using namespace popc::ir;
using namespace popc::ir::test;
using Catch::Matchers::Contains;
using Ints = std::vector<int64_t>;

TEST_CASE("Flatten", "[ir]") {
  Graph g;
  addInput(g, "x", {2, 3, 4, 5});
  CHECK(inferShape(g, makeOp("Flatten", "f1", {"x"}, {"a"})) == Shape{2, 60});
  Op op = makeOp("Flatten", "f2", {"x"}, {"b"});
  op.attrs.set("axis", int64_t(0));
  CHECK(inferShape(g, op) == Shape{1, 120});
  op = makeOp("Flatten", "f3", {"x"}, {"c"});
  op.attrs.set("axis", int64_t(-2));
  CHECK(inferShape(g, op) == Shape{6, 20});
  op = makeOp("Flatten", "f4", {"x"}, {"d"});
  op.attrs.set("axis", int64_t(4));
  CHECK(inferShape(g, op) == Shape{120, 1});
  op = makeOp("Flatten", "f5", {"x"}, {"e"});
  op.attrs.set("axis", int64_t(5));
  CHECK_THROWS_WITH(infer(g, op), Contains("Flatten 'f5': axis 5 is out of range"));
}

namespace {
Shape reshape(Shape x, Ints spec, int64_t allowzero = 0) {
  Graph g;
  addInput(g, "x", x);
  addConstInts(g, "shape", spec);
  Op op = makeOp("Reshape", "rs", {"x", "shape"});
  if (allowzero)
    op.attrs.set("allowzero", allowzero);
  return inferShape(g, op);
}
} // namespace

TEST_CASE("Reshape 0 / -1 / allowzero", "[ir]") {
  CHECK(reshape({2, 3, 4}, {4, -1}) == Shape{4, 6});
  CHECK(reshape({2, 3, 4}, {0, -1}) == Shape{2, 12});
  CHECK(reshape({2, 3, 4}, {0, 0, 4}) == Shape{2, 3, 4});
  CHECK(reshape({2, 3, 4}, {24}) == Shape{24});
  CHECK(reshape({0, 3}, {0, 3}, 1) == Shape{0, 3});
  CHECK_THROWS_WITH(reshape({2, 3, 4}, {5, -1}), Contains("Reshape 'rs': cannot reshape input [2,3,4]"));
  CHECK_THROWS_WITH(reshape({2, 3, 4}, {-1, -1}), Contains("more than one -1"));
  CHECK_THROWS_WITH(reshape({2, 3, 4}, {7, 0, 0, 0}), Contains("has 0 at position 3"));
  CHECK_THROWS_WITH(reshape({2, 3, 4}, {7, 0, 0}), Contains("cannot reshape"));
  CHECK_THROWS_WITH(reshape({2, 3}, {1, 1, 0}), Contains("has 0 at position 2"));
  CHECK_THROWS_WITH(reshape({2, 3}, {-2, 3}), Contains("invalid value -2"));
}

TEST_CASE("Reshape needs a constant shape (tensor or Constant op)", "[ir]") {
  Graph g;
  addInput(g, "x", {2, 6});
  addInput(g, "s", {2}, DType::I64);
  CHECK_THROWS_WITH(infer(g, makeOp("Reshape", "rs", {"x", "s"})),
                    Contains("Reshape 'rs': shape (input 1 's') depends on run-time data; popc needs static shapes"));
  Graph h;
  addInput(h, "x", {2, 6});
  Op c = makeOp("Constant", "c", {}, {"s"});
  c.attrs.set("value_ints", Ints{3, 4});
  infer(h, c);
  CHECK(inferShape(h, makeOp("Reshape", "rs", {"x", "s"})) == Shape{3, 4});
}

TEST_CASE("Transpose", "[ir]") {
  Graph g;
  addInput(g, "x", {2, 3, 4});
  CHECK(inferShape(g, makeOp("Transpose", "t1", {"x"}, {"a"})) == Shape{4, 3, 2});
  Op op = makeOp("Transpose", "t2", {"x"}, {"b"});
  op.attrs.set("perm", Ints{0, 2, 1});
  CHECK(inferShape(g, op) == Shape{2, 4, 3});
  op = makeOp("Transpose", "t3", {"x"}, {"c"});
  op.attrs.set("perm", Ints{0, 0, 1});
  CHECK_THROWS_WITH(infer(g, op), "Transpose 't3': attribute 'perm' [0,0,1] is not a permutation of the 3 input dims");
}

TEST_CASE("Concat", "[ir]") {
  Graph g;
  addInput(g, "a", {2, 3});
  addInput(g, "b", {2, 5});
  addInput(g, "c", {3, 3});
  Op op = makeOp("Concat", "cat", {"a", "b", "a"}, {"y1"});
  op.attrs.set("axis", int64_t(-1));
  CHECK(inferShape(g, op) == Shape{2, 11});
  op = makeOp("Concat", "cat2", {"a", "c"}, {"y2"});
  op.attrs.set("axis", int64_t(0));
  CHECK(inferShape(g, op) == Shape{5, 3});
  op = makeOp("Concat", "cat3", {"a", "c"}, {"y3"});
  op.attrs.set("axis", int64_t(1));
  CHECK_THROWS_WITH(infer(g, op), "Concat 'cat3': input 1 [3,3] does not match input 0 [2,3] outside axis 1");
  CHECK_THROWS_WITH(infer(g, makeOp("Concat", "cat4", {"a"}, {"y4"})),
                    Contains("required attribute 'axis' is missing"));
}

TEST_CASE("Constant attribute forms", "[ir]") {
  Graph g;
  Op op = makeOp("Constant", "c1", {}, {"a"});
  op.attrs.set("value_float", 2.5);
  CHECK(infer(g, op) == TensorInfo{DType::F32, {}});
  op = makeOp("Constant", "c2", {}, {"b"});
  op.attrs.set("value_floats", std::vector<double>{1, 2, 3});
  CHECK(infer(g, op) == TensorInfo{DType::F32, {3}});
  op = makeOp("Constant", "c3", {}, {"c"});
  op.attrs.set("value_int", int64_t(7));
  CHECK(infer(g, op) == TensorInfo{DType::I64, {}});
  CHECK(constantValue(g, "c")->toInt64s() == Ints{7});
  op = makeOp("Constant", "c4", {}, {"d"});
  op.attrs.set("value_ints", Ints{1, 2});
  CHECK(infer(g, op) == TensorInfo{DType::I64, {2}});
  auto t = std::make_shared<Tensor>(makeConst("v", {4, 5, 6, 7}, {2, 2}));
  op = makeOp("Constant", "c5", {}, {"e"});
  op.attrs.set("value", std::shared_ptr<const Tensor>(t));
  CHECK(infer(g, op) == TensorInfo{DType::I64, {2, 2}});
  Tensor e = constantOpTensor(op);
  CHECK(e.name == "e");
  CHECK(e.kind == TensorKind::Constant);
  CHECK(e.toInt64s() == Ints{4, 5, 6, 7});
  op = makeOp("Constant", "c6", {}, {"f"});
  CHECK_THROWS_WITH(infer(g, op), Contains("Constant 'c6': needs exactly one value attribute"));
  op.attrs.set("value_string", std::string("hi"));
  CHECK_THROWS_WITH(infer(g, op), Contains("string and sparse constants are not supported"));
}

TEST_CASE("Squeeze / Unsqueeze opset 13 (axes input)", "[ir]") {
  Graph g;
  addInput(g, "x", {1, 3, 1, 5});
  addConstInts(g, "ax0", {0});
  addConstInts(g, "axm", {-2, 0});
  CHECK(inferShape(g, makeOp("Squeeze", "s1", {"x"}, {"a"})) == Shape{3, 5});
  CHECK(inferShape(g, makeOp("Squeeze", "s2", {"x", "ax0"}, {"b"})) == Shape{3, 1, 5});
  CHECK(inferShape(g, makeOp("Squeeze", "s3", {"x", "axm"}, {"c"})) == Shape{3, 5});
  addConstInts(g, "ax1", {1});
  CHECK_THROWS_WITH(infer(g, makeOp("Squeeze", "s4", {"x", "ax1"}, {"d"})),
                    "Squeeze 's4': cannot squeeze axis 1 of size 3 (input [1,3,1,5])");
  CHECK(inferShape(g, makeOp("Unsqueeze", "u1", {"x", "ax0"}, {"e"})) == Shape{1, 1, 3, 1, 5});
  addConstInts(g, "uax", {-1, 1});
  CHECK(inferShape(g, makeOp("Unsqueeze", "u2", {"x", "uax"}, {"f"})) == Shape{1, 1, 3, 1, 5, 1});
  CHECK_THROWS_WITH(infer(g, makeOp("Unsqueeze", "u3", {"x"}, {"h"})),
                    "Unsqueeze 'u3': axes are required");
  Op legacy = makeOp("Squeeze", "s5", {"x"}, {"k"});
  legacy.attrs.set("axes", Ints{0});
  CHECK_THROWS_WITH(infer(g, legacy), Contains("'axes' is an input since opset 13"));
}

TEST_CASE("Squeeze / Unsqueeze before opset 13 (axes attribute)", "[ir]") {
  Graph g;
  g.opset = 11;
  addInput(g, "x", {1, 3, 1, 5});
  Op op = makeOp("Squeeze", "s", {"x"}, {"a"});
  op.attrs.set("axes", Ints{2});
  CHECK(inferShape(g, op) == Shape{1, 3, 5});
  op = makeOp("Unsqueeze", "u", {"x"}, {"b"});
  op.attrs.set("axes", Ints{0, 5});
  CHECK(inferShape(g, op) == Shape{1, 1, 3, 1, 5, 1});
  op = makeOp("Unsqueeze", "u2", {"x"}, {"c"});
  op.attrs.set("axes", Ints{0, 0});
  CHECK_THROWS_WITH(infer(g, op), Contains("contain a duplicate"));
  addConstInts(g, "ax", {0});
  CHECK_THROWS_WITH(infer(g, makeOp("Squeeze", "s3", {"x", "ax"}, {"d"})),
                    Contains("takes 1 input before opset 13"));
}

TEST_CASE("registry lists the supported ops", "[ir]") {
  auto types = OpRegistry::instance().types();
  for (const char *t : {"Add", "AveragePool", "BatchNormalization", "Concat", "Constant", "Conv", "Div",
                        "Dropout", "Flatten", "Gemm", "GlobalAveragePool", "Identity", "MatMul",
                        "MaxPool", "Mul", "Relu", "Reshape", "Sigmoid", "Softmax", "Squeeze", "Sub",
                        "Tanh", "Transpose", "Unsqueeze", "Slice", "Split", "Pad", "Tile", "Expand",
                        "Gather", "GatherElements", "GatherND", "DepthToSpace", "SpaceToDepth", "Trilu",
                        "Shape", "Size", "ConstantOfShape", "Range", "EyeLike", "Resize", "Upsample"})
    CHECK(std::find(types.begin(), types.end(), t) != types.end());
  CHECK(std::is_sorted(types.begin(), types.end()));
  CHECK(OpRegistry::instance().find("StringNormalizer") == nullptr);
}
