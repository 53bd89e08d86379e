#include "test/unit/codegen/jit_helper.h"

#include "support/error.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <set>
#include <string>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

struct PoolCase {
  bool max, includePad;
  uint32_t c, h, w, kh, kw, sh, sw, dh, dw;
  int32_t pad; // same on every side
  uint32_t outRowBegin, outRows;
};

// Runs every case as one vertex and compares it with a double reference;
// returns the functions (symbols) the cases used.
std::set<std::string> checkPools(const std::vector<PoolCase> &cases) {
  VertexCodegen cg;
  std::set<std::string> symbols;
  std::vector<std::pair<PoolSpec, uint32_t>> runs;
  for (const PoolCase &c : cases) {
    PoolSpec s;
    s.max = c.max;
    s.countIncludePad = c.includePad;
    s.channels = c.c;
    s.inHeight = c.h;
    s.inWidth = c.w;
    s.kernelH = c.kh;
    s.kernelW = c.kw;
    s.strideH = c.sh;
    s.strideW = c.sw;
    s.dilationH = c.dh;
    s.dilationW = c.dw;
    s.padTop = s.padLeft = c.pad;
    uint32_t fullOutH = (c.h + 2 * c.pad - c.dh * (c.kh - 1) - 1) / c.sh + 1;
    s.outWidth = (c.w + 2 * c.pad - c.dw * (c.kw - 1) - 1) / c.sw + 1;
    s.outRowBegin = c.outRowBegin;
    s.outRows = c.outRows ? c.outRows : fullOutH - c.outRowBegin;
    int64_t first = std::max<int64_t>(0, int64_t(s.outRowBegin) * c.sh - c.pad);
    int64_t last = std::min<int64_t>(c.h - 1, int64_t(s.outRowBegin + s.outRows - 1) * c.sh - c.pad +
                                                  int64_t(c.dh) * (c.kh - 1));
    s.inRowBegin = int32_t(first);
    s.inRows = uint32_t(last - first + 1);
    runs.emplace_back(s, cg.getOrCreate(s));
  }
  JitModule jit(cg);
  std::mt19937 rng(11);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const PoolCase &c = cases[ci];
    const PoolSpec &s = runs[ci].first;
    const VertexTypeInfo &vt = cg.vertexTypes()[runs[ci].second];
    INFO("case " << ci << " " << vt.name);
    symbols.insert(vt.symbol);
    auto in = randomVector<float>(size_t(c.c) * s.inRows * c.w, rng);
    std::vector<double> want(size_t(c.c) * s.outRows * s.outWidth);
    for (uint32_t ch = 0; ch < c.c; ++ch)
      for (uint32_t r = 0; r < s.outRows; ++r)
        for (uint32_t x = 0; x < s.outWidth; ++x) {
          double acc = c.max ? -std::numeric_limits<double>::infinity() : 0.0;
          int count = 0;
          for (uint32_t ky = 0; ky < c.kh; ++ky)
            for (uint32_t kx = 0; kx < c.kw; ++kx) {
              int64_t iy = int64_t(s.outRowBegin + r) * c.sh - c.pad + int64_t(ky) * c.dh;
              int64_t ix = int64_t(x) * c.sw - c.pad + int64_t(kx) * c.dw;
              if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w)
                continue;
              double v = in[(size_t(ch) * s.inRows + (iy - s.inRowBegin)) * c.w + ix];
              acc = c.max ? std::max(acc, v) : acc + v;
              ++count;
            }
          if (!c.max)
            acc /= c.includePad ? double(c.kh * c.kw) : double(count);
          want[(size_t(ch) * s.outRows + r) * s.outWidth + x] = acc;
        }
    auto out = jit.run(vt, {toBytes(in), Bytes(want.size() * 4, 0xFF)});
    requireClose(fromBytes<float>(out[1]), want);
  }
  return symbols;
}

} // namespace

TEST_CASE("max and average pooling match a reference with padding and bands", "[codegen][pool]") {
  const std::vector<PoolCase> cases = {
      {true, false, 3, 9, 10, 3, 3, 2, 2, 1, 1, 1, 0, 0},  {false, false, 3, 9, 10, 3, 3, 2, 2, 1, 1, 1, 0, 0},
      {false, true, 3, 9, 10, 3, 3, 2, 2, 1, 1, 1, 0, 0},  {true, false, 2, 12, 12, 2, 2, 2, 2, 1, 1, 0, 2, 3},
      {false, false, 2, 7, 8, 3, 2, 1, 1, 2, 2, 2, 1, 4},  {true, false, 1, 6, 6, 3, 3, 1, 1, 1, 1, 1, 0, 0},
      {false, false, 4, 5, 5, 5, 5, 1, 1, 1, 1, 2, 0, 0},
  };
  checkPools(cases);
}

TEST_CASE("one-row max pool bands differing only in their rows share one function", "[codegen][pool]") {
  // Every output row of a padded image as its own band: the edge bands skip
  // their kernel rows in the padding by an immediate's bits.
  std::vector<PoolCase> cases;
  for (uint32_t row = 0; row < 7; ++row)
    cases.push_back({true, false, 2, 7, 9, 3, 3, 1, 1, 1, 1, 1, row, 1});
  for (uint32_t row = 0; row < 4; ++row)
    cases.push_back({true, false, 3, 8, 9, 3, 3, 2, 2, 1, 1, 1, row, 1});
  CHECK(checkPools(cases).size() == 2);
}

TEST_CASE("pool fields and errors", "[codegen][pool]") {
  VertexCodegen cg;
  PoolSpec s;
  s.channels = 2;
  s.inHeight = s.inWidth = 4;
  s.inRows = 4;
  s.outRows = s.outWidth = 2;
  s.kernelH = s.kernelW = s.strideH = s.strideW = 2;
  const VertexTypeInfo &vt = cg.vertexTypes().at(cg.getOrCreate(s));
  REQUIRE(vt.fields.size() == 2);
  CHECK(vt.fields[0].name == "in");
  CHECK(vt.fields[0].bytes == 2 * 4 * 4 * 4);
  CHECK(vt.fields[1].name == "out");
  CHECK(vt.fields[1].bytes == 2 * 2 * 2 * 4);
  CHECK(vt.symbol == "v0_maxpool");
  s.max = false;
  CHECK(cg.vertexTypes().at(cg.getOrCreate(s)).symbol == "v1_avgpool");
  s.dtype = DType::I64;
  CHECK_THROWS_WITH(cg.getOrCreate(s), "codegen: AveragePool not supported for int64");
}
