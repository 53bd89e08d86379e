// float16 MatMul and Conv: float16 operands computed in float32, with float
// partials (rounded once when stored) or half partials (every partial sum
// rounded to float16, PopART's partialsType "half").
#include "test/unit/codegen/jit_helper.h"

#include "support/float16.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

Bytes halves(const std::vector<float> &v) {
  std::vector<uint16_t> h;
  for (float x : v)
    h.push_back(floatToHalf(x));
  return toBytes(h);
}

std::vector<float> floats(const Bytes &b) {
  std::vector<float> f;
  for (uint16_t h : fromBytes<uint16_t>(b))
    f.push_back(halfToFloat(h));
  return f;
}

// Values exactly representable in float16 (multiples of 1/64 in [-1, 1]).
std::vector<float> randomHalves(size_t n, std::mt19937 &rng) {
  std::vector<float> v(n);
  for (float &x : v)
    x = float(int(rng() % 129) - 64) / 64.0f;
  return v;
}

} // namespace

TEST_CASE("float16 matmul and conv match a reference with float partials", "[codegen][matmul][conv]") {
  VertexCodegen cg;
  MatMulSpec mm;
  mm.dtype = DType::F16;
  mm.m = 7;
  mm.n = 37;
  mm.k = 29;
  ConvSpec cv;
  cv.dtype = DType::F16;
  cv.inChannels = 3;
  cv.outChannels = 5;
  cv.inHeight = cv.inRows = 6;
  cv.inWidth = 9;
  cv.outRows = 6;
  cv.outWidth = 9;
  cv.kernelH = cv.kernelW = 3;
  cv.padTop = cv.padLeft = 1;
  cv.hasBias = true;
  const uint32_t mmIndex = cg.getOrCreate(mm), cvIndex = cg.getOrCreate(cv);
  JitModule jit(cg);
  std::mt19937 rng(3);

  const auto A = randomHalves(7 * 29, rng), B = randomHalves(29 * 37, rng);
  std::vector<double> want(7 * 37, 0.0);
  for (int m = 0; m < 7; ++m)
    for (int n = 0; n < 37; ++n)
      for (int k = 0; k < 29; ++k)
        want[size_t(m * 37 + n)] += double(A[size_t(m * 29 + k)]) * B[size_t(k * 37 + n)];
  const auto got = floats(jit.run(cg.vertexTypes()[mmIndex], {halves(A), halves(B), Bytes(7 * 37 * 2, 0xFF)}).back());
  for (size_t i = 0; i < want.size(); ++i) // exact in float32, then one rounding to float16
    REQUIRE(got[i] == halfToFloat(floatToHalf(float(want[i]))));

  const auto x = randomHalves(3 * 6 * 9, rng), w = randomHalves(5 * 3 * 9, rng), b = randomHalves(5, rng);
  const auto out =
      floats(jit.run(cg.vertexTypes()[cvIndex], {halves(x), halves(w), halves(b), Bytes(5 * 6 * 9 * 2, 0xFF)}).back());
  for (int o = 0; o < 5; ++o)
    for (int r = 0; r < 6; ++r)
      for (int c = 0; c < 9; ++c) {
        double acc = b[size_t(o)];
        for (int i = 0; i < 3; ++i)
          for (int ky = 0; ky < 3; ++ky)
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = r - 1 + ky, ix = c - 1 + kx;
              if (iy >= 0 && iy < 6 && ix >= 0 && ix < 9)
                acc += double(w[size_t(((o * 3 + i) * 3 + ky) * 3 + kx)]) * x[size_t((i * 6 + iy) * 9 + ix)];
            }
        REQUIRE(out[size_t((o * 6 + r) * 9 + c)] == halfToFloat(floatToHalf(float(acc))));
      }
}

// A sum of 16384 ones: float partials give 16384; a float16 accumulator stops
// growing at 2048 (2048 + 1 rounds back to 2048), so half partials give less,
// the IPU's answer with partialsType "half".
TEST_CASE("half partials round every partial sum to float16", "[codegen][matmul][conv]") {
  VertexCodegen cg;
  MatMulSpec s;
  s.dtype = DType::F16;
  s.m = 1;
  s.n = 1;
  s.k = 16384;
  const uint32_t floatIndex = cg.getOrCreate(s);
  s.halfPartials = true;
  const uint32_t halfIndex = cg.getOrCreate(s);
  ConvSpec c; // a 1x1 conv over 16384 input channels, one output
  c.dtype = DType::F16;
  c.inChannels = 16384;
  c.outChannels = 1;
  c.inHeight = c.inRows = c.outRows = 1;
  c.inWidth = c.outWidth = 1;
  c.halfPartials = true;
  const uint32_t convIndex = cg.getOrCreate(c);
  CHECK(cg.vertexTypes()[halfIndex].name.find("_halfPartials") != std::string::npos);
  CHECK(cg.vertexTypes()[halfIndex].cycles < cg.vertexTypes()[floatIndex].cycles); // twice the AMP rate
  JitModule jit(cg);
  const Bytes ones = halves(std::vector<float>(16384, 1.0f));
  auto run = [&](uint32_t index) { return floats(jit.run(cg.vertexTypes()[index], {ones, ones, Bytes(2, 0)}).back())[0]; };
  CHECK(run(floatIndex) == 16384.0f);
  const float half = run(halfIndex), conv = run(convIndex);
  CHECK(half < 16384.0f);
  CHECK(half >= 2048.0f);
  CHECK(conv < 16384.0f);

  s.dtype = DType::F32;
  CHECK_THROWS_WITH(cg.getOrCreate(s), "codegen: half partials are for float16 MatMul, not float32");
}
