// Shape inference of the data-movement and shape ops (ops_movement.cpp,
// index_map.cpp), including shapes computed from shape subgraphs.
#include "ir_test_util.h"

using namespace popc;
using namespace popc::ir;
using namespace popc::ir::test;
using Catch::Matchers::Contains;
using Ints = std::vector<int64_t>;

namespace {
Op withAttr(Op op, const std::string &k, AttrValue v) {
  op.attrs.set(k, std::move(v));
  return op;
}
} // namespace

TEST_CASE("Slice output shapes: steps, clamping, opset-1 attributes", "[ir][movement]") {
  Graph g;
  addInput(g, "x", {10, 6});
  addConstInts(g, "s", {-3, 100});
  addConstInts(g, "e", {1, -100});
  addConstInts(g, "a", {0, 1});
  addConstInts(g, "st", {-2, -1});
  CHECK(inferShape(g, makeOp("Slice", "sl", {"x", "s", "e", "a", "st"}, {"y1"})) == Shape{3, 6});
  addConstInts(g, "zero", {0});
  addConstInts(g, "big", {INT64_MAX});
  CHECK(inferShape(g, makeOp("Slice", "sl2", {"x", "zero", "big"}, {"y2"})) == Shape{10, 6});
  addConstInts(g, "st0", {0});
  CHECK_THROWS_WITH(infer(g, makeOp("Slice", "sl3", {"x", "zero", "big", "zero", "st0"}, {"y3"})),
                    Contains("Slice 'sl3': steps must not be 0"));
  Graph old;
  old.opset = 9;
  addInput(old, "x", {4, 5});
  Op op = withAttr(makeOp("Slice", "s1", {"x"}), "starts", Ints{1});
  op = withAttr(op, "ends", Ints{-1});
  CHECK(inferShape(old, withAttr(op, "axes", Ints{1})) == Shape{4, 3});
}

TEST_CASE("Split, Pad, Tile, Expand shapes", "[ir][movement]") {
  Graph g;
  addInput(g, "x", {2, 6});
  Op sp = withAttr(makeOp("Split", "sp", {"x"}, {"a", "b", "c"}), "axis", int64_t(1));
  CHECK(infer(g, sp).shape == Shape{2, 2});
  CHECK_THROWS_WITH(infer(g, withAttr(makeOp("Split", "bad", {"x"}, {"d", "e", "f", "h"}), "axis", int64_t(1))),
                    Contains("does not split into 4 equal parts"));
  addConstInts(g, "pads", {0, 1, 3, -2});
  CHECK(inferShape(g, makeOp("Pad", "pad", {"x", "pads"}, {"p"})) == Shape{5, 5});
  addConstInts(g, "reps", {3, 2});
  CHECK(inferShape(g, makeOp("Tile", "tile", {"x", "reps"}, {"t"})) == Shape{6, 12});
  addConstInts(g, "shape", {4, 1, 6});
  CHECK(inferShape(g, makeOp("Expand", "ex", {"x", "shape"}, {"ex"})) == Shape{4, 2, 6});
  addConstInts(g, "bad", {3, 6});
  CHECK_THROWS_WITH(infer(g, makeOp("Expand", "ex2", {"x", "bad"}, {"ex2"})), Contains("cannot expand input [2,6]"));
}

TEST_CASE("Gather family shapes need no constant indices", "[ir][movement]") {
  Graph g;
  addInput(g, "x", {5, 4, 3});
  addInput(g, "i", {2, 7}, DType::I64);
  CHECK(inferShape(g, withAttr(makeOp("Gather", "g", {"x", "i"}, {"g"}), "axis", int64_t(1))) == Shape{5, 2, 7, 3});
  addInput(g, "nd", {6, 2}, DType::I32);
  CHECK(inferShape(g, makeOp("GatherND", "gn", {"x", "nd"}, {"gn"})) == Shape{6, 3});
  addInput(g, "ie", {5, 4, 1}, DType::I64);
  CHECK(inferShape(g, withAttr(makeOp("GatherElements", "ge", {"x", "ie"}, {"ge"}), "axis", int64_t(2))) ==
        Shape{5, 4, 1});
  addInput(g, "f", {2}, DType::F32);
  CHECK_THROWS_WITH(infer(g, makeOp("Gather", "gf", {"x", "f"}, {"gf"})), Contains("indices must be int32 or int64"));
}

TEST_CASE("DepthToSpace / SpaceToDepth / Resize shapes", "[ir][movement]") {
  Graph g;
  addInput(g, "x", {1, 8, 2, 3});
  CHECK(inferShape(g, withAttr(makeOp("DepthToSpace", "d", {"x"}, {"d"}), "blocksize", int64_t(2))) ==
        Shape{1, 2, 4, 6});
  CHECK_THROWS_WITH(infer(g, withAttr(makeOp("SpaceToDepth", "s", {"x"}, {"s"}), "blocksize", int64_t(2))),
                    Contains("not divisible by blocksize 2"));
  addConstInts(g, "sizes", {1, 8, 5, 7});
  CHECK(inferShape(g, makeOp("Resize", "r", {"x", "", "", "sizes"}, {"r"})) == Shape{1, 8, 5, 7});
  // linear/cubic infer like nearest (the resize-decomposition pass lowers them).
  CHECK(inferShape(g, withAttr(makeOp("Resize", "lin", {"x", "", "", "sizes"}, {"lin"}), "mode",
                               std::string("linear"))) == Shape{1, 8, 5, 7});
  CHECK_THROWS_WITH(infer(g, withAttr(makeOp("Resize", "ar", {"x", "", "", "sizes"}, {"ar"}), "mode",
                                      std::string("area"))),
                    Contains("mode 'area' must be nearest, linear or cubic"));
}

TEST_CASE("Shape, Size, Range, ConstantOfShape shapes, Range needs known bounds", "[ir][movement]") {
  Graph g;
  addInput(g, "x", {2, 3, 4, 5});
  Op sh = withAttr(makeOp("Shape", "sh", {"x"}, {"s"}), "start", int64_t(1));
  CHECK(infer(g, withAttr(sh, "end", int64_t(-1))) == TensorInfo{DType::I64, {2}});
  CHECK(infer(g, makeOp("Size", "n", {"x"}, {"n"})) == TensorInfo{DType::I64, {}});
  Tensor &lo = addConstInts(g, "lo", {10});
  lo.info.shape = {};
  Tensor &hi = addConstInts(g, "hi", {1});
  hi.info.shape = {};
  Tensor &step = addConstInts(g, "step", {-3});
  step.info.shape = {};
  CHECK(inferShape(g, makeOp("Range", "r", {"lo", "hi", "step"}, {"r"})) == Shape{3});
  addInput(g, "limit", {}, DType::I64);
  CHECK_THROWS_WITH(infer(g, makeOp("Range", "r2", {"lo", "limit", "step"}, {"r2"})),
                    Contains("Range 'r2': limit (input 1 'limit') depends on run-time data; popc needs static shapes"));
  // ConstantOfShape of a Shape: known during inference, before any folding.
  CHECK(inferShape(g, makeOp("ConstantOfShape", "c", {"s"}, {"c"})) == Shape{3, 4});
}

TEST_CASE("Reshape infers through an exported shape subgraph", "[ir][movement]") {
  Graph g;
  addInput(g, "x", {6, 2, 2});
  infer(g, makeOp("Shape", "shape", {"x"}, {"s"}));
  Tensor &zero = addConstInts(g, "zero", {0});
  zero.info.shape = {};
  infer(g, makeOp("Gather", "g", {"s", "zero"}, {"n"}));
  addConstInts(g, "ax", {0});
  infer(g, makeOp("Unsqueeze", "u", {"n", "ax"}, {"n1"}));
  addConstInts(g, "m1", {-1});
  infer(g, withAttr(makeOp("Concat", "cat", {"n1", "m1"}, {"spec"}), "axis", int64_t(0)));
  CHECK(inferShape(g, makeOp("Reshape", "rs", {"x", "spec"}, {"y"})) == Shape{6, 4});
}

TEST_CASE("extreme Slice steps and oversized shapes are handled, not crashed on", "[ir][movement]") {
  Graph g;
  addInput(g, "x", {7});
  addConstInts(g, "s", {0});
  addConstInts(g, "e", {INT64_MAX});
  addConstInts(g, "a", {0});
  addConstInts(g, "big", {INT64_MAX});
  CHECK(inferShape(g, makeOp("Slice", "s1", {"x", "s", "e", "a", "big"}, {"y1"})) == Shape{1});
  addConstInts(g, "last", {-1});
  addConstInts(g, "min", {INT64_MIN});
  CHECK(inferShape(g, makeOp("Slice", "s2", {"x", "last", "min", "a", "min"}, {"y2"})) == Shape{1});
  addConstInts(g, "huge", {1 << 20, 1 << 20, 1 << 20});
  CHECK_THROWS_WITH(infer(g, makeOp("ConstantOfShape", "c", {"huge"}, {"c"})), Contains("too large"));
}

TEST_CASE("a shape-like value computed from a graph input names that input (for --freeze-input)", "[ir][movement]") {
  Graph g;
  addInput(g, "n", {}, DType::I64);
  Tensor &one = addConstInts(g, "one", {1});
  one.info.shape = {};
  infer(g, makeOp("Add", "plus", {"n", "one"}, {"limit"}));
  Tensor &zero = addConstInts(g, "zero", {0});
  zero.info.shape = {};
  try {
    infer(g, makeOp("Range", "r", {"zero", "limit", "one"}, {"r"}));
    FAIL("expected an error");
  } catch (const Error &e) {
    CHECK_THAT(e.what(), Contains("it is computed from graph input 'n'"));
    CHECK(e.inputNeedingValue() == "n");
  }
}
