#include "compiler/ir/op_attrs.h"
#include "ir_test_util.h"

using namespace popc;
using namespace popc::ir;
using namespace popc::ir::test;
using Catch::Matchers::Contains;

namespace {
Shape matmul(Shape a, Shape b) {
  Graph g;
  addInput(g, "a", a);
  addInput(g, "b", b);
  return inferShape(g, makeOp("MatMul", "mm", {"a", "b"}));
}
} // namespace

TEST_CASE("MatMul shapes incl. batch broadcast and 1-D promotion", "[ir]") {
  CHECK(matmul({2, 3}, {3, 4}) == Shape{2, 4});
  CHECK(matmul({5, 2, 3}, {3, 4}) == Shape{5, 2, 4});
  CHECK(matmul({5, 1, 2, 3}, {7, 3, 4}) == Shape{5, 7, 2, 4});
  CHECK(matmul({3}, {3, 4}) == Shape{4});
  CHECK(matmul({2, 3}, {3}) == Shape{2});
  CHECK(matmul({3}, {3}) == Shape{});
  CHECK(matmul({6, 2, 3}, {3}) == Shape{6, 2});
  CHECK_THROWS_WITH(matmul({2, 3}, {4, 5}),
                    "MatMul 'mm': inner dimensions differ: A [2,3] has K=3, B [4,5] has K=4");
  CHECK_THROWS_WITH(matmul({2, 2, 3}, {3, 3, 4}), Contains("batch dimensions"));
  CHECK_THROWS_WITH(matmul({}, {3}), Contains("rank >= 1"));
}

namespace {
Shape gemm(Shape a, Shape b, std::optional<Shape> c, int64_t transA = 0, int64_t transB = 0,
           int64_t opset = 13) {
  Graph g;
  g.opset = opset;
  addInput(g, "a", a);
  addInput(g, "b", b);
  std::vector<std::string> ins{"a", "b"};
  if (c) {
    addInput(g, "c", *c);
    ins.push_back("c");
  }
  Op op = makeOp("Gemm", "gemm", ins);
  op.attrs.set("transA", transA);
  op.attrs.set("transB", transB);
  return inferShape(g, op);
}
} // namespace

TEST_CASE("Gemm shapes", "[ir]") {
  CHECK(gemm({2, 3}, {3, 4}, Shape{2, 4}) == Shape{2, 4});
  CHECK(gemm({3, 2}, {3, 4}, Shape{4}, 1) == Shape{2, 4});
  CHECK(gemm({2, 3}, {4, 3}, Shape{1, 4}, 0, 1) == Shape{2, 4});
  CHECK(gemm({3, 2}, {4, 3}, Shape{}, 1, 1) == Shape{2, 4});
  CHECK(gemm({2, 3}, {3, 4}, std::nullopt) == Shape{2, 4});
  CHECK(gemm({2, 3}, {3, 4}, Shape{2, 1}) == Shape{2, 4});
}

TEST_CASE("Gemm errors", "[ir]") {
  CHECK_THROWS_WITH(gemm({2, 3}, {4, 3}, std::nullopt),
                    Contains("Gemm 'gemm': inner dimensions differ"));
  CHECK_THROWS_WITH(gemm({2, 3}, {3, 4}, Shape{3, 4}),
                    "Gemm 'gemm': input C [3,4] is not unidirectionally broadcastable to [M,N] = [2,4]");
  CHECK_THROWS_WITH(gemm({2, 3, 1}, {3, 4}, std::nullopt), Contains("input A must be 2-D"));
  CHECK_THROWS_WITH(gemm({2, 3}, {3, 4}, std::nullopt, 0, 0, 9),
                    Contains("input C is required before opset 11"));
}

TEST_CASE("gemmParams reads alpha/beta", "[ir]") {
  Graph g;
  addInput(g, "a", {2, 3});
  addInput(g, "b", {3, 4});
  Op op = makeOp("Gemm", "gemm", {"a", "b"});
  op.attrs.set("alpha", 0.5);
  GemmParams p = gemmParams(op, g);
  CHECK(p.alpha == 0.5);
  CHECK(p.beta == 1.0);
  CHECK(p.M == 2);
  CHECK(p.K == 3);
  CHECK(p.N == 4);
}
