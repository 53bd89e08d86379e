// Host evaluation of data-movement and shape ops against hand-computed values,
// and constant folding of the shape subgraphs exported models carry.
#include "compiler/passes/host_eval.h"
#include "compiler/passes/passes.h"

#include "test_graph.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::passes;
using namespace popc::passes::test;
using Ints = std::vector<int64_t>;

namespace {
// Evaluates op `i` of `g` on its constant inputs; output k.
std::vector<uint8_t> eval(const ir::Graph &g, size_t i = 0, size_t k = 0) {
  const ir::Op &op = *g.ops().at(i);
  std::vector<const ir::Tensor *> ins;
  for (const auto &in : op.inputs)
    ins.push_back(in.empty() ? nullptr : &g.tensor(in));
  std::vector<ir::TensorInfo> infos;
  for (const auto &o : op.outputs)
    infos.push_back(g.tensor(o).info);
  auto r = hostEvaluate(op, g, ins, infos);
  REQUIRE(r);
  return (*r).at(k);
}
template <typename T> std::vector<T> as(const std::vector<uint8_t> &b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}
ir::Attributes attr(const std::string &k, ir::AttrValue v) {
  ir::Attributes a;
  a.set(k, std::move(v));
  return a;
}
// 0..n-1 as int64 of `shape`.
void iota(ir::Graph &g, const std::string &name, Shape shape) {
  Ints v(size_t(numElements(shape)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = int64_t(i);
  addI64(g, name, std::move(shape), v);
}
} // namespace

TEST_CASE("Slice: negative steps, clamped starts/ends, negative axes", "[passes][movement]") {
  ir::Graph g;
  iota(g, "x", {3, 5});
  addI64(g, "s", {2}, {100, -1});
  addI64(g, "e", {2}, {-100, -6});
  addI64(g, "a", {2}, {-1, 0});
  addI64(g, "st", {2}, {-2, -2});
  addOp(g, "Slice", "sl", {"x", "s", "e", "a", "st"}, {"y"});
  CHECK(g.tensor("y").info.shape == Shape{2, 3});
  CHECK(as<int64_t>(eval(g)) == Ints{14, 12, 10, 4, 2, 0});
}

TEST_CASE("Split, equal and given parts", "[passes][movement]") {
  ir::Graph g;
  iota(g, "x", {2, 4});
  addI64(g, "sp", {2}, {1, 3});
  addOp(g, "Split", "s", {"x", "sp"}, {"a", "b"}, attr("axis", int64_t(1)));
  CHECK(as<int64_t>(eval(g, 0, 0)) == Ints{0, 4});
  CHECK(as<int64_t>(eval(g, 0, 1)) == Ints{1, 2, 3, 5, 6, 7});
  addOp(g, "Split", "e", {"x"}, {"c", "d"});
  CHECK(as<int64_t>(eval(g, 1, 1)) == Ints{4, 5, 6, 7});
}

TEST_CASE("Pad: constant value input, reflect, edge, negative pads crop", "[passes][movement]") {
  ir::Graph g;
  iota(g, "x", {1, 3});
  addI64(g, "p", {4}, {0, 2, 0, 1});
  addI64(g, "v", {}, {9});
  addOp(g, "Pad", "c", {"x", "p", "v"}, {"c"});
  CHECK(as<int64_t>(eval(g, 0)) == Ints{9, 9, 0, 1, 2, 9});
  addOp(g, "Pad", "r", {"x", "p"}, {"r"}, attr("mode", std::string("reflect")));
  CHECK(as<int64_t>(eval(g, 1)) == Ints{2, 1, 0, 1, 2, 1});
  addOp(g, "Pad", "e", {"x", "p"}, {"e"}, attr("mode", std::string("edge")));
  CHECK(as<int64_t>(eval(g, 2)) == Ints{0, 0, 0, 1, 2, 2});
  addI64(g, "crop", {4}, {0, -1, 0, 0});
  addOp(g, "Pad", "k", {"x", "crop"}, {"k"});
  CHECK(as<int64_t>(eval(g, 3)) == Ints{1, 2});
}

TEST_CASE("Tile and Expand", "[passes][movement]") {
  ir::Graph g;
  iota(g, "x", {2, 2});
  addI64(g, "r", {2}, {1, 2});
  addOp(g, "Tile", "t", {"x", "r"}, {"t"});
  CHECK(as<int64_t>(eval(g, 0)) == Ints{0, 1, 0, 1, 2, 3, 2, 3});
  iota(g, "col", {2, 1});
  addI64(g, "shape", {3}, {2, 1, 3});
  addOp(g, "Expand", "ex", {"col", "shape"}, {"ex"});
  CHECK(g.tensor("ex").info.shape == Shape{2, 2, 3});
  CHECK(as<int64_t>(eval(g, 1)) == Ints{0, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1});
}

TEST_CASE("DepthToSpace DCR and CRD, SpaceToDepth inverts DCR", "[passes][movement]") {
  ir::Graph g;
  iota(g, "x", {1, 4, 1, 2});
  addOp(g, "DepthToSpace", "dcr", {"x"}, {"dcr"}, attr("blocksize", int64_t(2)));
  // out[0,0,i,2w+j] = x[0, i*2+j, 0, w]
  CHECK(as<int64_t>(eval(g, 0)) == Ints{0, 2, 1, 3, 4, 6, 5, 7});
  ir::Attributes crd = attr("blocksize", int64_t(2));
  crd.set("mode", std::string("CRD"));
  addOp(g, "DepthToSpace", "crd", {"x"}, {"crd"}, crd);
  CHECK(as<int64_t>(eval(g, 1)) == Ints{0, 2, 1, 3, 4, 6, 5, 7}); // C'=1: same as DCR
  addConst(g, "d", {1, 1, 2, 4}, as<int64_t>(eval(g, 0)), DType::I64);
  addOp(g, "SpaceToDepth", "s2d", {"d"}, {"s2d"}, attr("blocksize", int64_t(2)));
  CHECK(as<int64_t>(eval(g, 2)) == Ints{0, 1, 2, 3, 4, 5, 6, 7});
}

TEST_CASE("Gather, GatherElements, GatherND with constant indices", "[passes][movement]") {
  ir::Graph g;
  iota(g, "x", {3, 2});
  addI64(g, "i", {2}, {-1, 0});
  addOp(g, "Gather", "g", {"x", "i"}, {"g"});
  CHECK(as<int64_t>(eval(g, 0)) == Ints{4, 5, 0, 1});
  addI64(g, "ie", {1, 2}, {2, 0});
  addOp(g, "GatherElements", "ge", {"x", "ie"}, {"ge"});
  CHECK(as<int64_t>(eval(g, 1)) == Ints{4, 1});
  addI64(g, "nd", {2, 2}, {1, 1, 2, 0});
  addOp(g, "GatherND", "gn", {"x", "nd"}, {"gn"});
  CHECK(as<int64_t>(eval(g, 2)) == Ints{3, 4});
}

TEST_CASE("Trilu, Resize nearest, Compress", "[passes][movement]") {
  ir::Graph g;
  iota(g, "x", {3, 3});
  addI64(g, "k", {}, {1});
  addOp(g, "Trilu", "t", {"x", "k"}, {"t"});
  CHECK(as<int64_t>(eval(g, 0)) == Ints{0, 1, 2, 0, 0, 5, 0, 0, 0});
  iota(g, "r", {1, 2});
  addF32(g, "sc", {2}, {1, 2});
  ir::Attributes nearest = attr("mode", std::string("nearest"));
  nearest.set("coordinate_transformation_mode", std::string("asymmetric"));
  addOp(g, "Resize", "rs", {"r", "", "sc"}, {"rs"}, nearest);
  CHECK(as<int64_t>(eval(g, 1)) == Ints{0, 0, 1, 1});
  addConst(g, "cond", {3}, std::vector<uint8_t>{1, 0, 1}, DType::Bool);
  addOp(g, "Compress", "c", {"x", "cond"}, {"c"}, attr("axis", int64_t(1)));
  CHECK(as<int64_t>(eval(g, 2)) == Ints{0, 2, 3, 5, 6, 8});
}

TEST_CASE("Shape ops: Shape start/end, Size, ConstantOfShape, Range, EyeLike", "[passes][movement]") {
  ir::Graph g;
  addInput(g, "x", {2, 3, 4});
  ir::Attributes se = attr("start", int64_t(-2));
  addOp(g, "Shape", "s", {"x"}, {"s"}, se);
  CHECK(as<int64_t>(eval(g, 0)) == Ints{3, 4});
  addOp(g, "Size", "n", {"x"}, {"n"});
  CHECK(as<int64_t>(eval(g, 1)) == Ints{24});
  addI64(g, "dims", {2}, {2, 2});
  auto seven = std::make_shared<ir::Tensor>();
  seven->info = {DType::I32, {1}};
  seven->kind = ir::TensorKind::Constant;
  seven->data = {7, 0, 0, 0};
  addOp(g, "ConstantOfShape", "c", {"dims"}, {"c"}, attr("value", std::shared_ptr<const ir::Tensor>(seven)));
  CHECK(as<int32_t>(eval(g, 2)) == std::vector<int32_t>{7, 7, 7, 7});
  addF32(g, "r0", {}, {1});
  addF32(g, "r1", {}, {2.1f});
  addF32(g, "rd", {}, {0.5f});
  addOp(g, "Range", "r", {"r0", "r1", "rd"}, {"r"});
  CHECK(as<float>(eval(g, 3)) == std::vector<float>{1, 1.5f, 2});
  addInput(g, "sq", {2, 3});
  addOp(g, "EyeLike", "eye", {"sq"}, {"eye"}, attr("k", int64_t(1)));
  CHECK(as<float>(eval(g, 4)) == std::vector<float>{0, 1, 0, 0, 0, 1});
}

TEST_CASE("Comparisons and Where on int shape tensors, float16 codec", "[passes][movement]") {
  ir::Graph g;
  addI64(g, "a", {3}, {1, -1, 3});
  addI64(g, "b", {}, {-1});
  addOp(g, "Equal", "eq", {"a", "b"}, {"eq"});
  CHECK(eval(g, 0) == std::vector<uint8_t>{0, 1, 0});
  addI64(g, "one", {}, {1});
  addConst(g, "m", {3}, std::vector<uint8_t>{0, 1, 0}, DType::Bool);
  addOp(g, "Where", "w", {"m", "one", "a"}, {"w"});
  CHECK(as<int64_t>(eval(g, 1)) == Ints{1, 1, 3});
  CHECK(as<uint16_t>(encodeDoubles(DType::F16, {1.5, -2, 65504, 1e6})) ==
        std::vector<uint16_t>{0x3e00, 0xc000, 0x7bff, 0x7c00});
  CHECK(decodeDoubles(DType::F16, encodeDoubles(DType::F16, {0.1}))[0] == Approx(0.1).epsilon(1e-3));
}

TEST_CASE("the exported Shape→Gather→Unsqueeze→Concat→Reshape chain infers and folds", "[passes][movement]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {2, 3, 4});
  addOp(g, "Shape", "shape", {"x"}, {"s"});
  addI64(g, "zero", {}, {0});
  addOp(g, "Gather", "batch", {"s", "zero"}, {"b"});
  addI64(g, "ax", {1}, {0});
  addOp(g, "Unsqueeze", "unsq", {"b", "ax"}, {"b1"});
  addI64(g, "minus1", {1}, {-1});
  addOp(g, "Concat", "cat", {"b1", "minus1"}, {"spec"}, attr("axis", int64_t(0)));
  // Inference already sees the value of the shape subgraph.
  addOp(g, "Reshape", "flat", {"x", "spec"}, {"y"});
  g.outputs = {"y"};
  CHECK(g.tensor("y").info.shape == Shape{2, 12});
  CHECK(foldConstants(ir) == 4);
  CHECK(opTypes(g) == std::vector<std::string>{"Reshape"});
  CHECK(values<int64_t>(g.tensor("spec")) == Ints{2, -1});
}

TEST_CASE("a shape-like input only known at run time is refused by name", "[passes][movement]") {
  ir::Graph g;
  addInput(g, "x", {2, 3});
  addInput(g, "reps", {2}, DType::I64);
  CHECK_THROWS_WITH(addOp(g, "Tile", "tile", {"x", "reps"}, {"y"}),
                    Catch::Contains("Tile 'tile': repeats (input 1 'reps') depends on run-time data; popc needs "
                                    "static shapes"));
}

TEST_CASE("resize-decomposition: linear and cubic Resize become Gather/Mul/Add with reference values",
          "[passes][movement]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addF32(g, "x", {1, 2}, {0, 1});
  addF32(g, "sc", {2}, {1, 2});
  addOp(g, "Resize", "lin", {"x", "", "sc"}, {"y"}, attr("mode", std::string("linear")));
  addOp(g, "Resize", "cub", {"x", "", "sc"}, {"z"}, attr("mode", std::string("cubic")));
  g.outputs = {"y", "z"};
  CHECK(decomposeResize(ir) == 2);
  ir::inferGraph(g);
  const auto types = opTypes(g);
  CHECK(std::count(types.begin(), types.end(), "Resize") == 0);
  foldConstants(ir);
  REQUIRE(g.ops().empty());
  // half_pixel: x_in = (i + 0.5) / 2 - 0.5 = -0.25, 0.25, 0.75, 1.25, edge-clamped.
  CHECK(values<float>(g.tensor("y")) == std::vector<float>{0, 0.25f, 0.75f, 1});
  const auto z = values<float>(g.tensor("z"));
  REQUIRE(z.size() == 4);
  CHECK(z[0] == Approx(-0.10546875)); // ONNX reference values (cubic A=-0.75 overshoots at the edges)
  CHECK(z[1] == Approx(0.2265625));
  CHECK(z[2] == Approx(0.7734375));
  CHECK(z[3] == Approx(1.10546875));
}

TEST_CASE("constant folding leaves big broadcasts of small constants to the device", "[passes][movement]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addF32(g, "c", {1}, {2});
  addI64(g, "big", {2}, {1024, 1024});
  addI64(g, "small", {2}, {4, 4});
  addOp(g, "Expand", "huge", {"c", "big"}, {"y"});
  addOp(g, "Expand", "tiny", {"c", "small"}, {"z"});
  g.outputs = {"y", "z"};
  CHECK(foldConstants(ir) == 1);
  CHECK(opTypes(g) == std::vector<std::string>{"Expand"});
  CHECK(values<float>(g.tensor("z")) == std::vector<float>(16, 2.0f));
}
