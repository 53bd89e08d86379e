#include "test/unit/codegen/jit_helper.h"

#include "support/error.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

std::vector<double> reference(const MatMulSpec &s, const std::vector<float> &A, const std::vector<float> &B,
                              const std::vector<float> &C) {
  std::vector<double> out(size_t(s.batch) * s.m * s.n);
  for (uint32_t b = 0; b < s.batch; ++b)
    for (uint32_t m = 0; m < s.m; ++m)
      for (uint32_t n = 0; n < s.n; ++n) {
        double acc = 0;
        for (uint32_t k = 0; k < s.k; ++k) {
          double a = s.transA ? A[(size_t(b) * s.k + k) * s.m + m] : A[(size_t(b) * s.m + m) * s.k + k];
          size_t bb = s.broadcastB ? 0 : b;
          double bv = s.transB ? B[(bb * s.n + n) * s.k + k] : B[(bb * s.k + k) * s.n + n];
          acc += a * bv;
        }
        size_t o = (size_t(b) * s.m + m) * s.n + n;
        out[o] = s.alpha * acc + (s.hasC ? s.beta * C[o] : 0.0);
      }
  return out;
}

// JIT-compiles every generated spec and compares each on random data with the
// reference; the output field starts as garbage, which the kernel must overwrite.
void checkAgainstReference(VertexCodegen &cg, const std::vector<std::pair<MatMulSpec, uint32_t>> &runs,
                           uint32_t seed) {
  JitModule jit(cg);
  std::mt19937 rng(seed);
  for (const auto &[s, index] : runs) {
    const VertexTypeInfo &vt = cg.vertexTypes()[index];
    INFO(vt.name);
    auto A = randomVector<float>(size_t(s.batch) * s.m * s.k, rng);
    auto B = randomVector<float>(size_t(s.broadcastB ? 1 : s.batch) * s.k * s.n, rng);
    auto C = randomVector<float>(size_t(s.batch) * s.m * s.n, rng);
    std::vector<Bytes> fields = {toBytes(A), toBytes(B)};
    if (s.hasC)
      fields.push_back(toBytes(C));
    fields.push_back(Bytes(C.size() * 4, 0xFF));
    requireClose(fromBytes<float>(jit.run(vt, fields).back()), reference(s, A, B, C));
  }
}

} // namespace

TEST_CASE("matmul matches a reference for every trans/broadcast/C/alpha/beta combination", "[codegen][matmul]") {
  VertexCodegen cg;
  std::vector<std::pair<MatMulSpec, uint32_t>> runs;
  for (int flags = 0; flags < 16; ++flags)
    for (auto [alpha, beta] : {std::pair{1.0f, 1.0f}, std::pair{0.5f, -2.0f}}) {
      MatMulSpec s;
      s.batch = 3;
      s.m = 5;
      s.n = 19;
      s.k = 13;
      s.transA = flags & 1;
      s.transB = flags & 2;
      s.broadcastB = flags & 4;
      s.hasC = flags & 8;
      s.alpha = alpha;
      s.beta = beta;
      runs.emplace_back(s, cg.getOrCreate(s));
    }
  checkAgainstReference(cg, runs, 1);
}

// Shapes that exercise the register tiling: row blocks with a remainder,
// column chunks in a loop plus an overlapping last chunk, narrow rows
// (masked lanes), accumulator sets over k with a remainder; for transB the
// dot-product tiles with a masked k tail.
TEST_CASE("matmul tiling matches a reference on wide, narrow and many-row shapes", "[codegen][matmul]") {
  struct Dims {
    uint32_t batch, m, n, k;
  };
  const std::vector<Dims> dims = {{2, 11, 70, 9}, {1, 3, 3, 1}, {1, 17, 40, 6}, {3, 1, 130, 7}, {1, 8, 33, 64},
                                  {2, 2, 16, 5}};
  VertexCodegen cg;
  std::vector<std::pair<MatMulSpec, uint32_t>> runs;
  for (const Dims &d : dims)
    for (int flags = 0; flags < 16; ++flags) {
      MatMulSpec s;
      s.transB = flags & 8;
      s.batch = d.batch;
      s.m = d.m;
      s.n = d.n;
      s.k = d.k;
      s.transA = flags & 1;
      s.broadcastB = flags & 2;
      s.hasC = flags & 4;
      if (flags == 5) {
        s.alpha = 0.5f;
        s.beta = -2.0f;
      }
      runs.emplace_back(s, cg.getOrCreate(s));
    }
  checkAgainstReference(cg, runs, 3);
}

TEST_CASE("matmul fields, cycles and names", "[codegen][matmul]") {
  VertexCodegen cg;
  MatMulSpec s;
  s.batch = 2;
  s.m = 4;
  s.n = 16;
  s.k = 8;
  s.hasC = true;
  s.broadcastB = true;
  const VertexTypeInfo &vt = cg.vertexTypes().at(cg.getOrCreate(s));
  REQUIRE(vt.fields.size() == 4);
  CHECK(vt.fields[0].name == "A");
  CHECK(vt.fields[0].bytes == 2 * 4 * 8 * 4);
  CHECK(vt.fields[1].name == "B");
  CHECK(vt.fields[1].bytes == 8 * 16 * 4); // broadcast: one B
  CHECK(vt.fields[2].name == "C");
  CHECK(vt.fields[3].name == "out");
  CHECK(vt.fields[3].access == FieldAccess::Output);
  CHECK(vt.fields[3].bytes == 2 * 4 * 16 * 4);
  CHECK(vt.cycles == 10 + 2 * 4 * 16 * (5 + 9 / 2) + 2 * 4 * 16);
  CHECK(vt.symbol == "v0_matmul");
  CHECK_THROWS_WITH(cg.getOrCreate(MatMulSpec{DType::I32}), "codegen: MatMul not supported for int32");
}

TEST_CASE("matmul float64", "[codegen][matmul]") {
  VertexCodegen cg;
  MatMulSpec s;
  s.dtype = DType::F64;
  s.m = 3;
  s.n = 7;
  s.k = 5;
  s.transB = true;
  uint32_t a = cg.getOrCreate(s);
  s.transB = false;
  uint32_t b = cg.getOrCreate(s);
  JitModule jit(cg);
  std::mt19937 rng(9);
  auto A = randomVector<double>(15, rng), B = randomVector<double>(35, rng);
  for (bool transB : {true, false}) {
    std::vector<double> want(21, 0.0);
    for (int m = 0; m < 3; ++m)
      for (int n = 0; n < 7; ++n)
        for (int k = 0; k < 5; ++k)
          want[m * 7 + n] += A[m * 5 + k] * (transB ? B[n * 5 + k] : B[k * 7 + n]);
    auto out = fromBytes<double>(
        jit.run(cg.vertexTypes()[transB ? a : b], {toBytes(A), toBytes(B), Bytes(21 * 8)}).back());
    requireClose(out, want, 1e-12);
  }
}

// Integer operands (MatMulInteger): int8/uint8 widened to int32, centred on
// their zero points; every layout path, with k tails whose masked lanes must
// read as the zero point (contribute 0), checked exactly.
TEST_CASE("integer matmul matches an int64 reference on every layout", "[codegen][matmul]") {
  struct Dims {
    uint32_t batch, m, n, k;
  };
  VertexCodegen cg;
  std::vector<std::pair<MatMulSpec, uint32_t>> runs;
  for (const Dims &d : std::vector<Dims>{{2, 5, 19, 13}, {1, 9, 40, 37}, {3, 1, 3, 1}})
    for (int flags = 0; flags < 8; ++flags) {
      MatMulSpec s;
      s.dtype = DType::I32;
      s.batch = d.batch;
      s.m = d.m;
      s.n = d.n;
      s.k = d.k;
      s.transA = flags & 1;
      s.transB = flags & 2;
      s.broadcastB = flags & 4;
      s.integer = IntegerOperands{flags & 1 ? DType::I8 : DType::U8, flags & 2 ? DType::U8 : DType::I8,
                                  flags & 1 ? -9 : 131, flags & 2 ? 200 : 0};
      runs.emplace_back(s, cg.getOrCreate(s));
    }
  JitModule jit(cg);
  std::mt19937 rng(5);
  for (const auto &[s, index] : runs) {
    const VertexTypeInfo &vt = cg.vertexTypes()[index];
    INFO(vt.name);
    auto operand = [&](size_t n, DType t) {
      Bytes v(n);
      for (uint8_t &x : v)
        x = uint8_t(rng());
      auto value = [t, v](size_t i) { return t == DType::I8 ? int64_t(int8_t(v[i])) : int64_t(v[i]); };
      return std::pair{v, value};
    };
    auto [A, a] = operand(size_t(s.batch) * s.m * s.k, s.integer->a);
    auto [B, b] = operand(size_t(s.broadcastB ? 1 : s.batch) * s.k * s.n, s.integer->b);
    const std::vector<Bytes> out = jit.run(vt, {A, B, Bytes(size_t(s.batch) * s.m * s.n * 4, 0xFF)});
    const std::vector<int32_t> got = fromBytes<int32_t>(out.back());
    for (uint32_t bi = 0; bi < s.batch; ++bi)
      for (uint32_t m = 0; m < s.m; ++m)
        for (uint32_t n = 0; n < s.n; ++n) {
          int64_t acc = 0;
          const size_t bb = s.broadcastB ? 0 : bi;
          for (uint32_t k = 0; k < s.k; ++k)
            acc += (a(s.transA ? (size_t(bi) * s.k + k) * s.m + m : (size_t(bi) * s.m + m) * s.k + k) - s.integer->aZero) *
                   (b(s.transB ? (bb * s.n + n) * s.k + k : (bb * s.k + k) * s.n + n) - s.integer->bZero);
          REQUIRE(got[(size_t(bi) * s.m + m) * s.n + n] == acc);
        }
  }
}

TEST_CASE("integer matmul refuses what it cannot compute", "[codegen][matmul]") {
  VertexCodegen cg;
  MatMulSpec s;
  s.m = s.n = s.k = 2;
  s.integer = IntegerOperands{};
  CHECK_THROWS_WITH(cg.getOrCreate(s), "codegen: integer MatMul accumulates in int32, not float32");
  s.dtype = DType::I32;
  s.integer->a = DType::I16;
  CHECK_THROWS_WITH(cg.getOrCreate(s), "codegen: integer MatMul operands are int8 or uint8, not int16 and int8");
  s.integer->a = DType::U8;
  s.hasC = true;
  CHECK_THROWS_WITH(cg.getOrCreate(s), "codegen: integer MatMul has no C and no alpha");
  s.hasC = false;
  const VertexTypeInfo &vt = cg.vertexTypes()[cg.getOrCreate(s)];
  CHECK(vt.fields[0].bytes == 4); // A: 2x2 uint8
  CHECK(vt.fields[2].bytes == 16); // out: 2x2 int32
}
