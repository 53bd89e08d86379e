#include "compiler/passes/host_eval.h"

#include "test_graph.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace popc;
using namespace popc::passes;
using namespace popc::passes::test;

namespace {
// Evaluates the single op of `g` on its (constant) inputs.
std::vector<uint8_t> evalOnly(const ir::Graph &g) {
  const ir::Op &op = *g.ops().at(0);
  std::vector<const ir::Tensor *> ins;
  for (const auto &i : op.inputs)
    ins.push_back(i.empty() ? nullptr : &g.tensor(i));
  auto r = hostEvaluate(op, ins, {g.tensor(op.outputs[0]).info});
  REQUIRE(r);
  REQUIRE(r->size() == 1);
  return (*r)[0];
}
template <typename T> std::vector<T> as(const std::vector<uint8_t> &b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}
} // namespace

TEST_CASE("host eval: Add broadcasts", "[passes]") {
  ir::Graph g;
  addF32(g, "a", {2, 3}, {1, 2, 3, 4, 5, 6});
  addF32(g, "b", {3}, {10, 20, 30});
  addOp(g, "Add", "add", {"a", "b"}, {"y"});
  CHECK(as<float>(evalOnly(g)) == std::vector<float>{11, 22, 33, 14, 25, 36});
}

TEST_CASE("host eval: Sub/Mul broadcast both ways", "[passes]") {
  ir::Graph g;
  addF32(g, "a", {2, 1}, {1, 2});
  addF32(g, "b", {1, 3}, {1, 2, 3});
  addOp(g, "Mul", "mul", {"a", "b"}, {"y"});
  CHECK(as<float>(evalOnly(g)) == std::vector<float>{1, 2, 3, 2, 4, 6});
}

TEST_CASE("host eval: integer Div truncates, division by zero is not folded", "[passes]") {
  ir::Graph g;
  addI64(g, "a", {3}, {7, -7, 6});
  addI64(g, "b", {3}, {2, 2, 3});
  addOp(g, "Div", "div", {"a", "b"}, {"y"});
  CHECK(as<int64_t>(evalOnly(g)) == std::vector<int64_t>{3, -3, 2});

  ir::Graph z;
  addI64(z, "a", {1}, {1});
  addI64(z, "b", {1}, {0});
  addOp(z, "Div", "div", {"a", "b"}, {"y"});
  const ir::Op &op = *z.ops()[0];
  CHECK_FALSE(hostEvaluate(op, {&z.tensor("a"), &z.tensor("b")}, {z.tensor("y").info}));
}

TEST_CASE("host eval: Transpose and Concat", "[passes]") {
  ir::Graph g;
  addF32(g, "a", {2, 3}, {1, 2, 3, 4, 5, 6});
  ir::Attributes perm;
  perm.set("perm", std::vector<int64_t>{1, 0});
  addOp(g, "Transpose", "t", {"a"}, {"y"}, perm);
  CHECK(as<float>(evalOnly(g)) == std::vector<float>{1, 4, 2, 5, 3, 6});

  ir::Graph c;
  addF32(c, "a", {2, 2}, {1, 2, 3, 4});
  addF32(c, "b", {2, 1}, {9, 8});
  ir::Attributes axis;
  axis.set("axis", int64_t(-1));
  addOp(c, "Concat", "cat", {"a", "b"}, {"y"}, axis);
  CHECK(as<float>(evalOnly(c)) == std::vector<float>{1, 2, 9, 3, 4, 8});
}

TEST_CASE("host eval: 3-D transpose", "[passes]") {
  ir::Graph g;
  std::vector<float> v(24);
  for (int i = 0; i < 24; ++i)
    v[size_t(i)] = float(i);
  addF32(g, "a", {2, 3, 4}, v);
  ir::Attributes perm;
  perm.set("perm", std::vector<int64_t>{2, 0, 1});
  addOp(g, "Transpose", "t", {"a"}, {"y"}, perm);
  std::vector<float> y = as<float>(evalOnly(g)); // shape [4,2,3]
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j)
        CHECK(y[size_t(k * 6 + i * 3 + j)] == v[size_t(i * 12 + j * 4 + k)]);
}

TEST_CASE("host eval: unary ops in double precision", "[passes]") {
  ir::Graph g;
  addF32(g, "a", {3}, {-1, 0, 4});
  addOp(g, "Tanh", "s", {"a"}, {"s"});
  addOp(g, "Relu", "r", {"a"}, {"r"});
  addOp(g, "Sigmoid", "g", {"a"}, {"g"});
  auto run = [&](size_t i) {
    const ir::Op &op = *g.ops()[i];
    auto r = hostEvaluate(op, {&g.tensor("a")}, {g.tensor(op.outputs[0]).info});
    REQUIRE(r);
    return as<float>((*r)[0]);
  };
  CHECK(run(1) == std::vector<float>{0, 0, 4});
  CHECK(run(0)[2] == Approx(std::tanh(4.0)));
  CHECK(run(2)[1] == 0.5f);
}

TEST_CASE("host eval: Constant op value attributes", "[passes]") {
  ir::Graph g;
  ir::Attributes a;
  a.set("value_ints", std::vector<int64_t>{3, -1});
  addOp(g, "Constant", "c", {}, {"y"}, a);
  CHECK(as<int64_t>(evalOnly(g)) == std::vector<int64_t>{3, -1});
}

TEST_CASE("host eval: element codecs", "[passes]") {
  auto bytes = encodeDoubles(DType::I32, {1, -2, 3});
  CHECK(decodeInt64s(DType::I32, bytes) == std::vector<int64_t>{1, -2, 3});
  CHECK(decodeDoubles(DType::Bool, encodeInt64s(DType::Bool, {0, 5})) == std::vector<double>{0, 1});
  // float16 decodes through float, exactly for representable values.
  CHECK(decodeDoubles(DType::F16, encodeDoubles(DType::F16, {1.5, -0.25})) == std::vector<double>{1.5, -0.25});
}

TEST_CASE("host eval: Max and Min fold every input", "[passes]") {
  ir::Graph g;
  addF32(g, "a", {2}, {1, 9});
  addF32(g, "b", {2}, {5, 2});
  addF32(g, "c", {1}, {7});
  addOp(g, "Max", "max", {"a", "b", "c"}, {"y"});
  CHECK(as<float>(evalOnly(g)) == std::vector<float>{7, 9});
}

TEST_CASE("host eval: the integer quotient that traps is left to run time", "[passes]") {
  for (const char *type : {"Div", "Mod"}) {
    ir::Graph g;
    addI64(g, "a", {1}, {std::numeric_limits<int64_t>::min()});
    addI64(g, "b", {1}, {-1});
    addOp(g, type, "q", {"a", "b"}, {"y"});
    const ir::Op &op = *g.ops()[0];
    CHECK_FALSE(hostEvaluate(op, {&g.tensor("a"), &g.tensor("b")}, {g.tensor("y").info}));
  }
}
