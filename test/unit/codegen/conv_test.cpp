#include "test/unit/codegen/jit_helper.h"

#include "support/error.h"

#include <set>
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

struct ConvCase {
  uint32_t ic, oc, h, w, kh, kw, sh, sw, dh, dw;
  int32_t padTop, padLeft, padBottom, padRight;
  uint32_t outRowBegin, outRows; // 0 outRows = all rows
  bool bias, relu;
  bool bandIncludesPadding; // field starts at a (possibly negative) padded row
};

// Builds the spec for a band of output rows, and the input field for it from
// the full image (rows outside the image are NaN: they must never be read).
ConvSpec makeSpec(const ConvCase &c, uint32_t &fullOutH) {
  ConvSpec s;
  s.inChannels = c.ic;
  s.outChannels = c.oc;
  s.inHeight = c.h;
  s.inWidth = c.w;
  fullOutH = (c.h + c.padTop + c.padBottom - c.dh * (c.kh - 1) - 1) / c.sh + 1;
  s.outWidth = (c.w + c.padLeft + c.padRight - c.dw * (c.kw - 1) - 1) / c.sw + 1;
  s.outRowBegin = c.outRowBegin;
  s.outRows = c.outRows ? c.outRows : fullOutH - c.outRowBegin;
  s.kernelH = c.kh;
  s.kernelW = c.kw;
  s.strideH = c.sh;
  s.strideW = c.sw;
  s.dilationH = c.dh;
  s.dilationW = c.dw;
  s.padTop = c.padTop;
  s.padLeft = c.padLeft;
  s.hasBias = c.bias;
  s.relu = c.relu;
  int64_t first = int64_t(s.outRowBegin) * c.sh - c.padTop;
  int64_t last = int64_t(s.outRowBegin + s.outRows - 1) * c.sh - c.padTop + int64_t(c.dh) * (c.kh - 1);
  if (!c.bandIncludesPadding) {
    first = std::max<int64_t>(first, 0);
    last = std::min<int64_t>(last, c.h - 1);
  }
  s.inRowBegin = int32_t(first);
  s.inRows = uint32_t(last - first + 1);
  return s;
}

// Runs every case as one vertex of `dtype` and compares it with a double
// reference on random data.
template <typename T> void checkCases(const std::vector<ConvCase> &cases, DType dtype, double rtol) {
  VertexCodegen cg;
  std::vector<std::pair<ConvSpec, uint32_t>> runs;
  for (const ConvCase &c : cases) {
    uint32_t oh;
    ConvSpec s = makeSpec(c, oh);
    s.dtype = dtype;
    runs.emplace_back(s, cg.getOrCreate(s));
  }
  JitModule jit(cg);
  std::mt19937 rng(5);
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const ConvCase &c = cases[ci];
    const ConvSpec &s = runs[ci].first;
    const VertexTypeInfo &vt = cg.vertexTypes()[runs[ci].second];
    INFO("case " << ci << " " << vt.name);
    auto image = randomVector<T>(size_t(c.ic) * c.h * c.w, rng);
    auto weights = randomVector<T>(size_t(c.oc) * c.ic * c.kh * c.kw, rng);
    auto bias = randomVector<T>(c.oc, rng);
    std::vector<T> in(size_t(c.ic) * s.inRows * c.w, std::numeric_limits<T>::quiet_NaN());
    for (uint32_t i = 0; i < c.ic; ++i)
      for (uint32_t r = 0; r < s.inRows; ++r) {
        int64_t ih = s.inRowBegin + int64_t(r);
        if (ih >= 0 && ih < c.h)
          for (uint32_t x = 0; x < c.w; ++x)
            in[(size_t(i) * s.inRows + r) * c.w + x] = image[(size_t(i) * c.h + ih) * c.w + x];
      }
    std::vector<double> want(size_t(c.oc) * s.outRows * s.outWidth);
    for (uint32_t o = 0; o < c.oc; ++o)
      for (uint32_t r = 0; r < s.outRows; ++r)
        for (uint32_t x = 0; x < s.outWidth; ++x) {
          double acc = c.bias ? bias[o] : 0.0;
          for (uint32_t i = 0; i < c.ic; ++i)
            for (uint32_t ky = 0; ky < c.kh; ++ky)
              for (uint32_t kx = 0; kx < c.kw; ++kx) {
                int64_t iy = int64_t(s.outRowBegin + r) * c.sh - c.padTop + int64_t(ky) * c.dh;
                int64_t ix = int64_t(x) * c.sw - c.padLeft + int64_t(kx) * c.dw;
                if (iy < 0 || iy >= c.h || ix < 0 || ix >= c.w)
                  continue;
                acc += double(weights[((size_t(o) * c.ic + i) * c.kh + ky) * c.kw + kx]) *
                       image[(size_t(i) * c.h + iy) * c.w + ix];
              }
          if (c.relu)
            acc = std::max(acc, 0.0);
          want[(size_t(o) * s.outRows + r) * s.outWidth + x] = acc;
        }
    std::vector<Bytes> fields = {toBytes(in), toBytes(weights)};
    if (c.bias)
      fields.push_back(toBytes(bias));
    fields.push_back(Bytes(want.size() * sizeof(T), 0xFF));
    requireClose(fromBytes<T>(jit.run(vt, fields).back()), want, rtol);
  }
}

} // namespace

TEST_CASE("conv matches a reference with stride, dilation, padding, bands, bias and relu", "[codegen][conv]") {
  checkCases<float>(
      {
          {3, 4, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, true, false},  // same conv, all rows
          {2, 3, 12, 10, 3, 2, 2, 2, 2, 1, 2, 1, 2, 1, 1, 3, true, false, false}, // band in the middle
          {5, 2, 6, 7, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, false, false, false},  // 1x1
          {2, 2, 8, 8, 5, 5, 1, 2, 1, 1, 2, 2, 2, 2, 0, 2, false, true, true},   // band starts in padding
          {1, 1, 5, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3, 0, true, false, true},   // band ends in padding
          {3, 2, 7, 9, 2, 4, 3, 3, 1, 1, 0, 3, 1, 3, 0, 0, true, false, false},  // wide left padding, stride 3
      },
      DType::F32, 1e-5);
}

// Shapes that exercise the host tiling: output-channel blocks with a
// remainder, column chunks in a loop plus overlapping edge chunks, several
// rows per tile with kernel rows in the padding, the flat 1x1 path, narrow rows.
namespace {

const std::vector<ConvCase> &tilingCases() {
  static const std::vector<ConvCase> cases = {
      {4, 11, 7, 70, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 5, true, true, false},    // 2 channel blocks (6+5)
      {3, 1, 12, 100, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 6, false, false, false},  // 2-row tiles, padding rows
      {3, 8, 6, 130, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 4, true, false, false},   // chunk loop + edge chunks
      {5, 10, 9, 40, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 3, 3, true, true, false},    // flat 1x1 band (120 wide)
      {6, 9, 9, 300, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 3, true, false, false},   // stride 2 with a chunk loop
      {2, 3, 13, 90, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0, true, false, true},    // dilation 2, all rows
      {7, 2, 7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, true, false},      // 7x7 plane, 7 rows per tile
      {4, 5, 6, 33, 1, 1, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0, false, false, false},   // 1x1 stride 2
      {3, 2, 10, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, 4, true, false, false},    // width 3 (narrowest vectors)
      {2, 3, 9, 40, 3, 5, 1, 1, 1, 1, 1, 2, 1, 2, 0, 0, true, true, true},      // 3x5 kernel, padded band
      {7, 1, 4, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, true, false, false},     // 1x1, 4 channel sets + remainder
      {9, 2, 8, 12, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1, 2, 3, false, true, false},    // 1x1 with column padding
  };
  return cases;
}

} // namespace

TEST_CASE("conv tiling matches a reference on wide, narrow and many-channel shapes", "[codegen][conv]") {
  checkCases<float>(tilingCases(), DType::F32, 1e-5);
}

TEST_CASE("conv in f64 matches a reference", "[codegen][conv]") {
  checkCases<double>(tilingCases(), DType::F64, 1e-12);
}

TEST_CASE("conv describes its fields and rejects bad geometry", "[codegen][conv]") {
  VertexCodegen cg;
  uint32_t oh;
  ConvSpec s = makeSpec({3, 4, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, true, false}, oh);
  const VertexTypeInfo &vt = cg.vertexTypes().at(cg.getOrCreate(s));
  REQUIRE(vt.fields.size() == 5);
  CHECK(vt.fields[0].name == "in");
  CHECK(vt.fields[0].bytes == 3 * 9 * 11 * 4);
  CHECK(vt.fields[1].name == "weights");
  CHECK(vt.fields[1].bytes == 4 * 3 * 3 * 3 * 4);
  CHECK(vt.fields[2].name == "bias");
  CHECK(vt.fields[3].name == "out");
  CHECK(vt.fields[3].bytes == 4 * 9 * 11 * 4);
  CHECK(vt.fields[4].name == "inChannels"); // 3x3 taps: the channels are a number, not code
  CHECK(vt.fields[4].access == FieldAccess::Immediate);
  CHECK(vt.fields[4].value == 3);
  CHECK(vt.cycles == 10 + uint64_t(4 * 9 * 11) * (5 + 28 / 2) + 4 * 9 * 11);

  ConvSpec narrow = s;
  narrow.inRows = 5; // rows 5..8 are needed too
  CHECK_THROWS_AS(cg.getOrCreate(narrow), popc::Error);
  ConvSpec zeroStride = s;
  zeroStride.strideW = 0;
  CHECK_THROWS_AS(cg.getOrCreate(zeroStride), popc::Error);
  ConvSpec i32 = s;
  i32.dtype = DType::I32;
  CHECK_THROWS_WITH(cg.getOrCreate(i32), "codegen: Conv not supported for int32");
}

TEST_CASE("a conv vertex given its weights as the bias field adds no bias, bit for bit", "[codegen][conv]") {
  // The lowering's input-channel slices after the first pass their weights
  // as the optional bias field: the same type serves both (one fewer JIT-ed
  // function). Either way the accumulators start at +0.0, as with a zero bias.
  for (const ConvCase &c : std::vector<ConvCase>{
           {5, 3, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, true, false},  // 3x3, relu
           {7, 2, 4, 30, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, true, false, false}, // flat 1x1
       }) {
    uint32_t oh;
    ConvSpec s = makeSpec(c, oh);
    VertexCodegen cg;
    const VertexTypeInfo &vt = cg.vertexTypes()[cg.getOrCreate(s)];
    JitModule jit(cg);
    std::mt19937 rng(9);
    auto in = randomVector<float>(size_t(c.ic) * s.inRows * c.w, rng);
    auto weights = randomVector<float>(size_t(c.oc) * c.ic * c.kh * c.kw, rng);
    const Bytes out(size_t(c.oc) * s.outRows * s.outWidth * sizeof(float), 0xFF);
    const Bytes zeros(c.oc * sizeof(float), 0), bias = toBytes(randomVector<float>(c.oc, rng));
    const Bytes withZeroBias = jit.run(vt, {toBytes(in), toBytes(weights), zeros, out}).back();
    const Bytes withBias = jit.run(vt, {toBytes(in), toBytes(weights), bias, out}).back();
    const Bytes standIn = jit.run(vt, {toBytes(in), toBytes(weights), {}, out}, {{2, 1}}).back();
    CHECK(standIn == withZeroBias);
    CHECK(standIn != withBias);
  }
}

TEST_CASE("conv and matmul with empty dimensions write nothing and do not crash", "[codegen][conv][matmul]") {
  VertexCodegen cg;
  uint32_t oh;
  const ConvSpec base = makeSpec({3, 4, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, true, false}, oh);
  std::vector<ConvSpec> convs(4, base);
  convs[0].outChannels = 0;
  convs[1].outRows = 0;
  convs[2].outWidth = 0;
  convs[3].inChannels = 0; // out = relu(bias)
  std::vector<uint32_t> convIndex;
  for (const ConvSpec &s : convs)
    convIndex.push_back(cg.getOrCreate(s));
  std::vector<MatMulSpec> mms(4);
  for (MatMulSpec &s : mms)
    s.batch = s.m = s.n = s.k = 3;
  mms[0].m = 0;
  mms[1].n = 0;
  mms[2].k = 0; // out = 0
  mms[3].k = 0;
  mms[3].transB = true;
  std::vector<uint32_t> mmIndex;
  for (const MatMulSpec &s : mms)
    mmIndex.push_back(cg.getOrCreate(s));
  JitModule jit(cg);
  for (size_t i = 0; i < convs.size(); ++i) {
    const VertexTypeInfo &vt = cg.vertexTypes()[convIndex[i]];
    INFO(vt.name);
    std::vector<Bytes> fields;
    for (size_t f = 0; f < memoryFieldCount(vt.fields); ++f) // (inChannels: an immediate, 0 here)
      fields.push_back(Bytes(vt.fields[f].bytes, 0));
    std::vector<float> bias = {0.5f, -1.0f, 2.0f, -3.0f};
    if (vt.fields[2].bytes == bias.size() * 4)
      fields[2] = toBytes(bias);
    auto out = fromBytes<float>(jit.run(vt, fields).back());
    if (i == 3)
      for (size_t j = 0; j < out.size(); ++j)
        CHECK(out[j] == std::max(bias[j / (size_t(base.outRows) * base.outWidth)], 0.0f));
  }
  for (size_t i = 0; i < mms.size(); ++i) {
    const VertexTypeInfo &vt = cg.vertexTypes()[mmIndex[i]];
    INFO(vt.name);
    std::vector<Bytes> fields;
    for (const FieldInfo &f : vt.fields)
      fields.push_back(Bytes(f.bytes, 0xFF));
    for (float v : fromBytes<float>(jit.run(vt, fields).back()))
      CHECK(v == 0.0f);
  }
}

TEST_CASE("conv specs differing only in input channels share one function, each with its own type", "[codegen][conv]") {
  // Input channels (>= 4) are an immediate field: one JIT-compiled function,
  // types of their own (name, cycles, field sizes), each correct.
  std::vector<ConvCase> cases;
  for (uint32_t ic : {4u, 7u, 13u, 32u})
    cases.push_back({ic, 3, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, true, false, false});
  for (uint32_t ic : {5u, 9u})
    cases.push_back({ic, 2, 4, 30, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, false, true, false}); // flat 1x1, 4 sets
  checkCases<float>(cases, DType::F32, 1e-5);
  VertexCodegen cg;
  std::set<std::string> symbols, names;
  std::set<uint64_t> cycles;
  for (const ConvCase &c : cases) {
    uint32_t oh;
    const VertexTypeInfo &vt = cg.vertexTypes()[cg.getOrCreate(makeSpec(c, oh))];
    symbols.insert(vt.symbol);
    names.insert(vt.name);
    cycles.insert(vt.cycles);
    REQUIRE(vt.fields.back().access == FieldAccess::Immediate);
    CHECK(vt.fields.back().value == c.ic);
    CHECK(vt.fields.back().bytes == 0);
  }
  CHECK(symbols.size() == 2); // the 3x3 and the 1x1
  CHECK(names.size() == cases.size());
  CHECK(cycles.size() == cases.size());
  // With a 1x1 kernel, fewer channels than the accumulator sets stay in the code.
  uint32_t oh;
  const VertexTypeInfo &small = cg.vertexTypes()[cg.getOrCreate(makeSpec(
      {3, 2, 4, 30, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, false, true, false}, oh))];
  CHECK(small.fields.back().access != FieldAccess::Immediate);
  CHECK(symbols.count(small.symbol) == 0);
}

TEST_CASE("one-row conv bands differing only in their rows share one function", "[codegen][conv]") {
  // A band of one output row takes its rows as an immediate: which kernel rows
  // fall in the padding (the image's top and bottom edges), the input band's
  // rows and its first row. Rows outside the image are NaN in the field, so a
  // kernel row that should be skipped and is not shows.
  std::vector<ConvCase> cases;
  for (uint32_t row = 0; row < 6; ++row) {
    cases.push_back({5, 3, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, row, 1, true, true, false});
    cases.push_back({5, 3, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, row, 1, true, true, true}); // band with padded rows
    cases.push_back({3, 2, 12, 30, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, row, 1, true, false, false}); // a stem
  }
  cases.push_back({4, 2, 9, 16, 3, 3, 1, 1, 2, 1, 2, 1, 2, 1, 2, 1, false, false, false}); // dilated rows
  checkCases<float>(cases, DType::F32, 1e-5);
  VertexCodegen cg;
  std::set<std::string> symbols;
  for (const ConvCase &c : cases) {
    uint32_t oh;
    const VertexTypeInfo &vt = cg.vertexTypes()[cg.getOrCreate(makeSpec(c, oh))];
    INFO(vt.name);
    symbols.insert(vt.symbol);
    REQUIRE(vt.fields.back().access == FieldAccess::Immediate);
    CHECK(vt.fields.back().name == "rows");
  }
  CHECK(symbols.size() == 3); // the 3x3 (the two band kinds share it), the stem, the dilated 3x3
  // Bands of two rows keep their rows in the code (a branch per tile row would be slower).
  uint32_t oh;
  const VertexTypeInfo &two = cg.vertexTypes()[cg.getOrCreate(
      makeSpec({5, 3, 6, 20, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 2, true, true, false}, oh))];
  CHECK(two.fields.back().name != "rows");
}

TEST_CASE("a big kernel's rows run as a loop over groups of rows with the same taps", "[codegen][conv]") {
  // One-row bands of 7x7 and 5x5 kernels: a stem-like 7x7 whose tile has 7
  // chains (two accumulator sets: rows in pairs, the seventh unrolled) and a
  // 5x5 with 8 chains (one set: rows one at a time). Rows outside the image
  // are NaN in the field: a skipped row that is read shows.
  std::vector<ConvCase> cases;
  for (uint32_t row : {0u, 1u, 2u, 5u, 9u, 11u}) {
    cases.push_back({3, 1, 24, 224, 7, 7, 2, 2, 1, 1, 3, 3, 3, 3, row, 1, true, true, false});
    cases.push_back({4, 1, 12, 130, 5, 5, 1, 1, 1, 1, 2, 2, 2, 2, row, 1, false, false, false});
  }
  checkCases<float>(cases, DType::F32, 1e-5);
}
