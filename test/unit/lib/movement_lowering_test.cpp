// Data-movement lowerings (exchange copies only) run end to end on a small
// target whose tiles split the tensors, for several dtypes; each output must
// equal the host evaluator's bytes (whose values passes/movement_eval_test.cpp
// checks against hand-computed results).
#include "compiler/ir/host_eval.h"
#include "test/unit/lib/lib_test_util.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>

using namespace popc;

namespace {

using Ints = std::vector<int64_t>;

ir::Tensor ints(const std::string &name, const Ints &v, Shape shape = {}) {
  ir::Tensor t{name, {DType::I64, shape.empty() && v.size() != 1 ? Shape{int64_t(v.size())} : shape},
               ir::TensorKind::Constant, {}};
  if (shape.empty() && v.size() == 1)
    t.info.shape = {1};
  t.data.resize(v.size() * 8);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

ir::Tensor floats(const std::string &name, const std::vector<float> &v) {
  ir::Tensor t{name, {DType::F32, Shape{int64_t(v.size())}}, ir::TensorKind::Constant, {}};
  t.data.resize(v.size() * 4);
  std::memcpy(t.data.data(), v.data(), t.data.size());
  return t;
}

std::vector<uint8_t> randomBytes(size_t n, uint32_t seed, DType dtype) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto &b : v)
    b = uint8_t(rng());
  if (dtype == DType::Bool)
    for (auto &b : v)
      b &= 1;
  if (dtype == DType::F16) // keep halves finite
    for (size_t i = 1; i < n; i += 2)
      v[i] &= 0x3b;
  return v;
}

// One op on input "x" (plus constant inputs), lowered and run; every output
// is compared with ir::hostEvaluate on the same op.
void check(const std::string &type, DType dtype, Shape shape, std::vector<ir::Tensor> consts,
           ir::Attributes attrs = {}, size_t outputs = 1, int64_t opset = 13) {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  g.opset = opset;
  const ir::Tensor x = ir::test::addInput(g, "x", shape, dtype);
  std::vector<std::string> outputNames;
  for (size_t k = 0; k < outputs; ++k)
    outputNames.push_back("y" + std::to_string(k));
  ir::Op op = ir::test::makeOp(type, "op", {"x"}, outputNames);
  for (auto &c : consts) {
    op.inputs.push_back(c.name);
    if (!c.name.empty())
      g.addTensor(c);
  }
  op.attrs = attrs;
  g.outputs = op.outputs;
  ir::test::infer(g, op);

  ir::Tensor xin = x;
  xin.kind = ir::TensorKind::Constant;
  xin.data = randomBytes(x.info.bytes(), 7, dtype);
  runtime::HostTensorMap in;
  in["x"] = runtime::HostTensor{dtype, shape, xin.data};
  const lib::test::Lowered lowered = lib::test::lowerAndRun(ir, in, 5);
  CHECK(lowered.computeSets.empty()); // copies only
  const runtime::HostTensorMap &result = lowered.outputs;


  std::vector<const ir::Tensor *> ins{&xin};
  for (auto &c : consts)
    ins.push_back(c.name.empty() ? nullptr : &g.tensor(c.name));
  std::vector<ir::TensorInfo> infos;
  for (auto &o : op.outputs)
    infos.push_back(g.tensor(o).info);
  auto want = ir::hostEvaluate(*g.ops()[0], g, ins, infos);
  REQUIRE(want);
  for (size_t k = 0; k < outputs; ++k) {
    INFO(type << " output " << k);
    CHECK(result.at(op.outputs[k]).data == (*want)[k]);
  }
}

ir::Attributes attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> list) {
  ir::Attributes a;
  for (const auto &[k, v] : list)
    a.set(k, v);
  return a;
}

} // namespace

TEST_CASE("Slice with negative steps and clamping, any dtype", "[lib][movement]") {
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::Bool})
    check("Slice", t, {6, 40}, {ints("s", {5, -1000}), ints("e", {-100, 1000}), ints("a", {0, 1}), ints("st", {-2, 3})});
}

TEST_CASE("Split into unequal parts", "[lib][movement]") {
  check("Split", DType::I16, {4, 50}, {ints("sp", {7, 0, 43})}, attrs({{"axis", int64_t(1)}}), 3);
}

TEST_CASE("Pad constant / reflect / edge", "[lib][movement]") {
  ir::Tensor value{"v", {DType::F32, {}}, ir::TensorKind::Constant, {0, 0, 0x80, 0x3f}};
  check("Pad", DType::F32, {3, 20}, {ints("p", {1, 30, 2, -3}), value});
  check("Pad", DType::I32, {3, 20}, {ints("p", {2, 5, 2, 19})}, attrs({{"mode", std::string("reflect")}}));
  check("Pad", DType::U8, {3, 20}, {ints("p", {0, 4, 3, 1})}, attrs({{"mode", std::string("edge")}}));
}

TEST_CASE("Tile, Expand, DepthToSpace, SpaceToDepth, Trilu", "[lib][movement]") {
  check("Tile", DType::F32, {3, 7}, {ints("r", {2, 9})});
  check("Expand", DType::I64, {3, 1}, {ints("s", {2, 3, 40})});
  check("DepthToSpace", DType::F16, {2, 8, 3, 5}, {}, attrs({{"blocksize", int64_t(2)}, {"mode", std::string("CRD")}}));
  check("SpaceToDepth", DType::F32, {1, 3, 6, 8}, {}, attrs({{"blocksize", int64_t(2)}}));
  check("Trilu", DType::I64, {3, 9, 11}, {ints("k", {-2})}, attrs({{"upper", int64_t(0)}}));
}

TEST_CASE("Gather family with constant indices", "[lib][movement]") {
  check("Gather", DType::F32, {5, 30}, {ints("i", {4, -1, 0, 2, 2, 3}, {2, 3})});
  check("GatherElements", DType::F32, {4, 30}, {ints("i", {3, 0, -1, 1, 2, 0, 0, 3}, {2, 4})},
        attrs({{"axis", int64_t(0)}}));
  check("GatherND", DType::I32, {3, 4, 10}, {ints("i", {2, 3, 0, 1, 1, 0}, {3, 2})});
}

TEST_CASE("Resize nearest (sizes) and Upsample", "[lib][movement]") {
  check("Resize", DType::F32, {1, 2, 3, 4}, {ir::Tensor{}, ir::Tensor{}, ints("sz", {1, 2, 7, 9})},
        attrs({{"mode", std::string("nearest")}, {"nearest_mode", std::string("round_prefer_ceil")}}));
  // Upsample (opset 9): scales as an input, nearest floors x_out / scale.
  check("Upsample", DType::F32, {1, 2, 3, 4}, {floats("scales", {1, 1, 2, 2.5f})},
        attrs({{"mode", std::string("nearest")}}), 1, 9);
  check("Upsample", DType::I32, {2, 3, 2}, {floats("scales", {1, 3, 2})}, attrs({{"mode", std::string("nearest")}}),
        1, 9);
}
