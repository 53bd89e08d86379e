#include "compiler/ir/op_attrs.h"
#include "ir_test_util.h"

using namespace popc;
using namespace popc::ir;
using namespace popc::ir::test;
using Catch::Matchers::Contains;

namespace {
struct ConvCase {
  Shape x, w;
  std::vector<std::pair<std::string, AttrValue>> attrs;
};
Shape conv(const ConvCase &c, bool bias = false) {
  Graph g;
  addInput(g, "x", c.x);
  addConstF32(g, "w", c.w);
  std::vector<std::string> ins{"x", "w"};
  if (bias) {
    addConstF32(g, "b", {c.w[0]});
    ins.push_back("b");
  }
  Op op = makeOp("Conv", "conv1", ins);
  for (auto &[k, v] : c.attrs)
    op.attrs.set(k, v);
  return inferShape(g, op);
}
using Ints = std::vector<int64_t>;
} // namespace

TEST_CASE("Conv output shapes", "[ir]") {
  CHECK(conv({{1, 3, 16, 16}, {8, 3, 3, 3}, {{"pads", Ints{1, 1, 1, 1}}}}, true) == Shape{1, 8, 16, 16});
  CHECK(conv({{1, 3, 16, 16}, {8, 3, 3, 3}, {}}) == Shape{1, 8, 14, 14});
  // Same as ONNX test_conv_with_strides_padding: 7x5 input, 3x3 kernel, stride 2, pad 1.
  CHECK(conv({{1, 1, 7, 5}, {1, 1, 3, 3}, {{"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}}) ==
        Shape{1, 1, 4, 3});
  CHECK(conv({{1, 1, 7, 5}, {1, 1, 3, 3}, {{"strides", Ints{2, 2}}}}) == Shape{1, 1, 3, 2});
  CHECK(conv({{1, 1, 10, 10}, {1, 1, 3, 3}, {{"dilations", Ints{2, 2}}}}) == Shape{1, 1, 6, 6});
  CHECK(conv({{2, 4, 8, 8}, {6, 2, 3, 3}, {{"group", int64_t(2)}}}) == Shape{2, 6, 6, 6});
  CHECK(conv({{1, 1, 7, 5}, {1, 1, 3, 3},
              {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}}) == Shape{1, 1, 4, 3});
  CHECK(conv({{1, 1, 7, 5}, {1, 1, 3, 3},
              {{"strides", Ints{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}}}) == Shape{1, 1, 4, 3});
  CHECK(conv({{1, 1, 7, 5}, {1, 1, 3, 3}, {{"auto_pad", std::string("VALID")}}}) == Shape{1, 1, 5, 3});
  CHECK(conv({{1, 1, 5, 5}, {1, 1, 3, 3}, {{"kernel_shape", Ints{3, 3}}}}) == Shape{1, 1, 3, 3});
}

TEST_CASE("Conv auto_pad resolves explicit pads", "[ir]") {
  Graph g;
  addInput(g, "x", {1, 1, 6, 6});
  addConstF32(g, "w", {1, 1, 4, 4});
  Op op = makeOp("Conv", "c", {"x", "w"});
  op.attrs.set("auto_pad", std::string("SAME_UPPER"));
  WindowParams p = convParams(op, g);
  CHECK(p.padsBegin == Ints{1, 1});
  CHECK(p.padsEnd == Ints{2, 2});
  op.attrs.set("auto_pad", std::string("SAME_LOWER"));
  p = convParams(op, g);
  CHECK(p.padsBegin == Ints{2, 2});
  CHECK(p.padsEnd == Ints{1, 1});
  CHECK(p.outSpatial == Shape{6, 6});
}

TEST_CASE("Conv errors", "[ir]") {
  CHECK_THROWS_WITH(conv({{1, 3, 8, 8}, {8, 4, 3, 3}, {}}),
                    "Conv 'conv1': input channels 3 != weights' channels per group 4 x group 1");
  CHECK_THROWS_WITH(conv({{1, 3}, {8, 3}, {}}), Contains("1 to 3 spatial dims"));
  CHECK_THROWS_WITH(conv({{1, 3, 8}, {8, 3, 3, 3}, {}}), Contains("weights W must have rank 3"));
  CHECK_THROWS_WITH(conv({{1, 3, 8, 8}, {8, 3, 3, 3}, {{"kernel_shape", Ints{5, 5}}}}),
                    Contains("'kernel_shape' [5,5] does not match"));
  CHECK_THROWS_WITH(conv({{1, 3, 8, 8}, {8, 3, 3, 3}, {{"pads", Ints{1, 1}}}}),
                    Contains("'pads' has 2 values, expected 4"));
  CHECK_THROWS_WITH(conv({{1, 3, 8, 8}, {8, 3, 3, 3}, {{"strides", Ints{0, 1}}}}),
                    Contains("'strides' values must be >= 1"));
  CHECK_THROWS_WITH(conv({{1, 3, 2, 2}, {8, 3, 3, 3}, {}}), Contains("larger than the padded input"));
  CHECK_THROWS_WITH(conv({{1, 3, 8, 8}, {8, 3, 3, 3}, {{"auto_pad", std::string("FOO")}}}),
                    Contains("'auto_pad' is 'FOO'"));
  CHECK_THROWS_WITH(conv({{1, 4, 8, 8}, {6, 2, 3, 3}, {{"group", int64_t(4)}}}),
                    Contains("input channels 4 != weights' channels per group 2 x group 4"));
  Graph g;
  addInput(g, "x", {1, 3, 8, 8});
  addConstF32(g, "w", {8, 3, 3, 3});
  addConstF32(g, "b", {4});
  CHECK_THROWS_WITH(infer(g, makeOp("Conv", "c", {"x", "w", "b"})),
                    "Conv 'c': bias B must have shape [8], got [4]");
}

namespace {
Shape pool(const std::string &type, Shape x, std::vector<std::pair<std::string, AttrValue>> attrs) {
  Graph g;
  addInput(g, "x", x);
  Op op = makeOp(type, "pool", {"x"});
  for (auto &[k, v] : attrs)
    op.attrs.set(k, v);
  return inferShape(g, op);
}
} // namespace

TEST_CASE("MaxPool / AveragePool shapes", "[ir]") {
  for (const char *type : {"MaxPool", "AveragePool"}) {
    CHECK(pool(type, {1, 3, 32, 32}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}) ==
          Shape{1, 3, 16, 16});
    CHECK(pool(type, {1, 3, 28, 28}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{2, 2, 2, 2}}}) ==
          Shape{1, 3, 30, 30});
    // ONNX test_*pool_2d_ceil: 4x4, kernel 3, stride 2, ceil → 2x2 (floor → 1x1)
    CHECK(pool(type, {1, 1, 4, 4},
               {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t(1)}}) ==
          Shape{1, 1, 2, 2});
    CHECK(pool(type, {1, 1, 4, 4}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}}) ==
          Shape{1, 1, 1, 1});
    CHECK(pool(type, {1, 3, 32, 32},
               {{"kernel_shape", Ints{2, 2}}, {"auto_pad", std::string("SAME_UPPER")}}) ==
          Shape{1, 3, 32, 32});
    CHECK(pool(type, {1, 3, 32}, {{"kernel_shape", Ints{2}}}) == Shape{1, 3, 31});
    CHECK_THROWS_WITH(pool(type, {1, 3, 8, 8}, {}),
                      std::string(type) + " 'pool': required attribute 'kernel_shape' is missing");
  }
  CHECK(pool("MaxPool", {1, 1, 8, 8}, {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}) ==
        Shape{1, 1, 6, 6});
  CHECK_THROWS_WITH(pool("AveragePool", {1, 1, 8, 8}, {{"kernel_shape", Ints{2, 2}}, {"dilations", Ints{2, 2}}}),
                    Contains("'dilations' is not supported for AveragePool"));
}

TEST_CASE("poolParams reads count_include_pad and ceil_mode", "[ir]") {
  Graph g;
  addInput(g, "x", {1, 1, 5, 5});
  Op op = makeOp("AveragePool", "ap", {"x"});
  op.attrs.set("kernel_shape", Ints{3, 3});
  op.attrs.set("pads", Ints{1, 1, 1, 1});
  op.attrs.set("count_include_pad", int64_t(1));
  op.attrs.set("ceil_mode", int64_t(1));
  WindowParams p = poolParams(op, g);
  CHECK(p.countIncludePad);
  CHECK(p.ceilMode);
  CHECK(p.padsBegin == Ints{1, 1});
  CHECK(p.outSpatial == Shape{5, 5});
}

TEST_CASE("MaxPool optional Indices output", "[ir]") {
  Graph g;
  addInput(g, "x", {1, 1, 4, 4});
  Op op = makeOp("MaxPool", "mp", {"x"}, {"y", "idx"});
  op.attrs.set("kernel_shape", Ints{2, 2});
  infer(g, op);
  CHECK(g.tensor("idx").info == TensorInfo{DType::I64, {1, 1, 3, 3}});
}

TEST_CASE("GlobalAveragePool", "[ir]") {
  Graph g;
  addInput(g, "x", {2, 8, 7, 7});
  CHECK(inferShape(g, makeOp("GlobalAveragePool", "gap", {"x"})) == Shape{2, 8, 1, 1});
  Graph h;
  addInput(h, "x", {2, 8});
  CHECK_THROWS_WITH(infer(h, makeOp("GlobalAveragePool", "gap", {"x"})), Contains("rank >= 3"));
}

TEST_CASE("BatchNormalization inference only", "[ir]") {
  auto build = [](Graph &g, Shape paramShape) {
    addInput(g, "x", {1, 4, 5, 5});
    for (const char *n : {"s", "b", "m", "v"})
      addConstF32(g, n, paramShape);
  };
  Graph g;
  build(g, {4});
  CHECK(inferShape(g, makeOp("BatchNormalization", "bn", {"x", "s", "b", "m", "v"})) ==
        Shape{1, 4, 5, 5});
  Graph h;
  build(h, {4});
  CHECK_THROWS_WITH(infer(h, makeOp("BatchNormalization", "bn", {"x", "s", "b", "m", "v"},
                                    {"y", "running_mean", "running_var"})),
                    Contains("BatchNormalization 'bn': running mean/var or saved statistics outputs need training_mode=1"));
  Graph k;
  build(k, {3});
  CHECK_THROWS_WITH(infer(k, makeOp("BatchNormalization", "bn", {"x", "s", "b", "m", "v"})),
                    "BatchNormalization 'bn': scale must have shape [4] (channels), got [3]");
  Graph m;
  build(m, {4});
  CHECK_THROWS_WITH(infer(m, makeOp("BatchNormalization", "bn", {"x", "s", "b", "m"})),
                    "BatchNormalization 'bn': expects 5 inputs, got 4");
}

TEST_CASE("Softmax axis defaults depend on opset", "[ir]") {
  Graph g;
  addInput(g, "x", {2, 3, 4});
  Op op = makeOp("Softmax", "sm", {"x"});
  g.opset = 13;
  CHECK(softmaxAxis(op, g) == 2);
  CHECK_FALSE(softmaxCoerces2D(g));
  g.opset = 11;
  CHECK(softmaxAxis(op, g) == 1);
  CHECK(softmaxCoerces2D(g));
  op.attrs.set("axis", int64_t(-1));
  CHECK(softmaxAxis(op, g) == 2);
  CHECK(inferShape(g, op) == Shape{2, 3, 4});
  Op bad = makeOp("Softmax", "sm2", {"x"}, {"y2"});
  bad.attrs.set("axis", int64_t(3));
  CHECK_THROWS_WITH(infer(g, bad), "Softmax 'sm2': axis 3 is out of range [-3, 2] for rank 3");
}

TEST_CASE("Dropout passes through, optional mask", "[ir]") {
  Graph g;
  addInput(g, "x", {2, 3});
  CHECK(inferShape(g, makeOp("Dropout", "d", {"x"}, {"y", "mask"})) == Shape{2, 3});
  CHECK(g.tensor("mask").info.dtype == DType::Bool);
  Graph h;
  h.opset = 9;
  addInput(h, "x", {2, 3});
  infer(h, makeOp("Dropout", "d", {"x"}, {"y", "mask"}));
  CHECK(h.tensor("mask").info.dtype == DType::F32);
  Graph k;
  addInput(k, "x", {2, 3});
  Tensor ratio;
  ratio.name = "ratio";
  ratio.kind = TensorKind::Constant;
  ratio.info = {DType::F32, {}};
  ratio.data.assign(4, 0);
  k.addTensor(ratio);
  Tensor tm;
  tm.name = "tm";
  tm.kind = TensorKind::Constant;
  tm.info = {DType::Bool, {}};
  tm.data = {1};
  k.addTensor(tm);
  // Training mode with ratio 0 keeps every element; any other ratio is random.
  CHECK(infer(k, makeOp("Dropout", "d", {"x", "ratio", "tm"})).shape == Shape{2, 3});
  Tensor half = ratio;
  half.name = "half";
  const float v = 0.5f;
  std::memcpy(half.data.data(), &v, 4);
  k.addTensor(half);
  CHECK_THROWS_WITH(infer(k, makeOp("Dropout", "d2", {"x", "half", "tm"})), Contains("drops random elements"));
}
