// Elementwise vertices across dtypes: float16 rounding, Cast edge cases,
// unsigned and small-integer semantics, Mod sign rules, integer Pow,
// comparisons/logic/Where with bool outputs. References are written out by
// hand or computed with C++'s own (well-defined) conversions.
#include "test/unit/codegen/jit_helper.h"

#include "support/float16.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

using half = _Float16;

// Runs one vertex on whole-vector inputs (scalar inputs: one element).
template <typename Out, typename... Ins>
std::vector<Out> run(ElementwiseSpec spec, const std::vector<Ins> &...ins) {
  VertexCodegen cg;
  const uint32_t type = cg.getOrCreate(spec);
  JitModule jit(cg);
  std::vector<Bytes> fields = {toBytes(ins)...};
  fields.push_back(Bytes(size_t(spec.elements) * sizeof(Out)));
  return fromBytes<Out>(jit.run(cg.vertexTypes()[type], fields).back());
}

ElementwiseSpec spec(const std::string &op, DType t, size_t n, size_t arity, std::vector<double> params = {}) {
  return ElementwiseSpec{kernelOp(op), t, uint32_t(n), std::vector<bool>(arity, false), std::move(params)};
}

ElementwiseSpec castSpec(DType from, DType to, size_t n) {
  ElementwiseSpec s = spec("Cast", from, n, 1);
  s.outDType = to;
  return s;
}

uint16_t bitsOf(half h) {
  uint16_t b;
  std::memcpy(&b, &h, 2);
  return b;
}

template <typename T> std::vector<T> valuesOf(std::initializer_list<double> v) {
  std::vector<T> r;
  for (double x : v)
    r.push_back(T(x));
  return r;
}

// The documented float → integer rule: truncate, NaN → 0, saturate at the
// int32 range (int64 for int64), then wrap to the target width.
template <typename T> T castRule(double x) {
  if (std::isnan(x))
    return 0;
  if (sizeof(T) == 8) {
    if (x >= 9223372036854775807.0) return std::numeric_limits<T>::max();
    if (x <= -9223372036854775808.0) return std::numeric_limits<T>::min();
    return T(int64_t(std::trunc(x)));
  }
  const double t = std::trunc(x);
  const int32_t i = t >= 2147483647.0 ? INT32_MAX : t <= -2147483648.0 ? INT32_MIN : int32_t(t);
  return T(i); // modular since C++20
}

const std::vector<double> kFloatEdges = {std::nan(""), INFINITY, -INFINITY, -1.5, -0.5, -0.0, 0.0, 2.7, 127.9,
                                         128, 255.5, 256, 300, -129, 65504, 1e10, -1e10};

template <typename T> void checkFloatToInt(DType to) {
  const size_t n = kFloatEdges.size();
  std::vector<float> inF(kFloatEdges.begin(), kFloatEdges.end());
  std::vector<double> inD(kFloatEdges.begin(), kFloatEdges.end());
  auto fromF = run<T>(castSpec(DType::F32, to, n), inF);
  auto fromD = run<T>(castSpec(DType::F64, to, n), inD);
  for (size_t i = 0; i < n; ++i) {
    INFO("cast of " << kFloatEdges[i] << " to " << dtypeName(to));
    CHECK(int64_t(fromF[i]) == int64_t(castRule<T>(double(inF[i]))));
    CHECK(int64_t(fromD[i]) == int64_t(castRule<T>(inD[i])));
  }
}

} // namespace

TEST_CASE("float16 arithmetic computes in float32 and rounds once to nearest even", "[codegen][elementwise]") {
  std::vector<half> a = {half(1), half(1), half(2048), half(65504), half(-0.0f), half(0.1f), half(3)};
  std::vector<half> b = {half(0.00048828125f) /* 2^-11: tie */, half(0.00146484375f), half(1), half(16),
                         half(0), half(0.2f), half(-7)};
  // Ties: 1 + 2^-11 → 1 (even), 1 + 3·2^-11 → 1 + 2^-9 (even), 2048 + 1 → 2048, 65504 + 16 → inf.
  auto sum = run<half>(spec("Add", DType::F16, a.size(), 2), a, b);
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(float(a[i]) << " + " << float(b[i]));
    CHECK(bitsOf(sum[i]) == bitsOf(half(float(a[i]) + float(b[i]))));
  }
  CHECK(float(sum[0]) == 1.0f);
  CHECK(float(sum[1]) == 1.001953125f);
  CHECK(float(sum[2]) == 2048.0f);
  CHECK(std::isinf(float(sum[3])));

  std::mt19937 rng(5);
  auto x = randomVector<float>(257, rng, -6, 6);
  std::vector<half> h(x.begin(), x.end());
  for (const char *op : {"Exp", "Sigmoid", "Tanh", "Neg", "Sqrt"}) {
    INFO(op);
    auto got = run<half>(spec(op, DType::F16, h.size(), 1), h);
    for (size_t i = 0; i < h.size(); ++i) {
      const float v = float(h[i]);
      const std::string o = op;
      const float want = o == "Exp"       ? std::exp(v)
                         : o == "Sigmoid" ? 1 / (1 + std::exp(-v))
                         : o == "Tanh"    ? std::tanh(v)
                         : o == "Neg"     ? -v
                                          : std::sqrt(v);
      if (std::isnan(want))
        CHECK(std::isnan(float(got[i])));
      else
        CHECK(bitsOf(got[i]) == bitsOf(half(want)));
    }
  }
}

TEST_CASE("Cast between floats: float64 → float16 rounds once", "[codegen][elementwise]") {
  // 1 + 2^-11 + 2^-40 is just above a float16 tie: rounds up to 1 + 2^-10.
  // Through float32 (where 2^-40 is lost) it would round to even, 1.0.
  std::vector<double> d = {1 + std::ldexp(1, -11) + std::ldexp(1, -40), 65519.0, 65520.0, -INFINITY, 1e-8};
  auto h = run<half>(castSpec(DType::F64, DType::F16, d.size()), d);
  CHECK(float(h[0]) == 1.0009765625f);
  CHECK(float(h[1]) == 65504.0f);
  CHECK(std::isinf(float(h[2])));
  CHECK(float(h[3]) == -INFINITY);
  CHECK(bitsOf(h[4]) == bitsOf(half(1e-8))); // subnormal
  std::vector<half> hs = {half(1.5f), half(-65504.0f), half(INFINITY), half(6e-8f)};
  auto f = run<float>(castSpec(DType::F16, DType::F32, hs.size()), hs);
  auto g = run<double>(castSpec(DType::F16, DType::F64, hs.size()), hs);
  for (size_t i = 0; i < hs.size(); ++i) {
    CHECK(f[i] == float(hs[i]));
    CHECK(g[i] == double(float(hs[i])));
  }
  std::vector<float> nan = {std::nanf("")};
  CHECK(std::isnan(float(run<half>(castSpec(DType::F32, DType::F16, 1), nan)[0])));
}

TEST_CASE("bfloat16: Cast rounds float32 to nearest even, widens exactly, arithmetic in float32",
          "[codegen][elementwise]") {
  // 1 + 2^-8 is a tie between bfloat16 1.0 (even) and 1 + 2^-7; 1 + 3*2^-8 ties up to even 1 + 2^-6.
  std::vector<float> f = {1.0f + std::ldexp(1.0f, -8), 1.0f + 3 * std::ldexp(1.0f, -8), 0.81910545f,
                          -3.0e38f, 3.4e38f, std::nanf(""), -0.0f};
  auto b = run<uint16_t>(castSpec(DType::F32, DType::BF16, f.size()), f);
  CHECK(b[0] == 0x3f80);
  CHECK(b[1] == 0x3f82);
  CHECK(b[2] == 0x3f52);      // 0.8203125 (truncation would give 0x3f51)
  CHECK(b[3] == 0xff62);      // -2.99e38 stays finite
  CHECK(b[4] == 0x7f80);      // rounds up past the largest bfloat16: inf
  CHECK((b[5] & 0x7fc0) == 0x7fc0); // NaN stays a quiet NaN
  CHECK(b[6] == 0x8000);
  for (size_t i = 0; i < f.size(); ++i)
    CHECK(b[i] == floatToBfloat16(f[i])); // the host converter agrees
  auto back = run<float>(castSpec(DType::BF16, DType::F32, b.size()), b);
  CHECK(back[0] == 1.0f);
  CHECK(back[2] == 0.8203125f);
  CHECK(std::isinf(back[4]));
  CHECK(std::isnan(back[5]));
  // Add computes in float32 and rounds once: 1 + 2^-8 is a tie and goes to even 1.0.
  std::vector<uint16_t> one = {0x3f80}, tiny = {0x3b80}; // 1.0 and 2^-8
  CHECK(run<uint16_t>(spec("Add", DType::BF16, 1, 2), one, tiny)[0] == 0x3f80);
}

TEST_CASE("Cast float → integer truncates, NaN → 0, saturates, then wraps", "[codegen][elementwise]") {
  checkFloatToInt<int8_t>(DType::I8);
  checkFloatToInt<int16_t>(DType::I16);
  checkFloatToInt<int32_t>(DType::I32);
  checkFloatToInt<int64_t>(DType::I64);
  checkFloatToInt<uint8_t>(DType::U8);
  // A few spelled out.
  std::vector<float> in = {-1.5f, 300.0f, std::nanf(""), INFINITY, -2.9f};
  CHECK(run<uint8_t>(castSpec(DType::F32, DType::U8, 5), in) == std::vector<uint8_t>{255, 44, 0, 255, 254});
  CHECK(run<int32_t>(castSpec(DType::F32, DType::I32, 5), in) ==
        std::vector<int32_t>{-1, 300, 0, INT32_MAX, -2});
  std::vector<half> h = {half(-7.75f), half(65504.0f)};
  CHECK(run<int16_t>(castSpec(DType::F16, DType::I16, 2), h) == std::vector<int16_t>{-7, int16_t(65504)});
}

TEST_CASE("Cast to and from bool and between integers", "[codegen][elementwise]") {
  std::vector<float> f = {0.0f, -0.0f, std::nanf(""), 0.5f, -3.0f};
  CHECK(run<uint8_t>(castSpec(DType::F32, DType::Bool, 5), f) == std::vector<uint8_t>{0, 0, 1, 1, 1});
  std::vector<uint8_t> b = {0, 1, 2, 255}; // any non-zero byte is true
  CHECK(run<int32_t>(castSpec(DType::Bool, DType::I32, 4), b) == std::vector<int32_t>{0, 1, 1, 1});
  CHECK(run<float>(castSpec(DType::Bool, DType::F32, 4), b) == std::vector<float>{0, 1, 1, 1});
  std::vector<int64_t> i64 = {300, -1, -129, int64_t(1) << 40, 0};
  CHECK(run<int8_t>(castSpec(DType::I64, DType::I8, 5), i64) == std::vector<int8_t>{44, -1, 127, 0, 0});
  CHECK(run<uint8_t>(castSpec(DType::I64, DType::Bool, 5), i64) == std::vector<uint8_t>{1, 1, 1, 1, 0});
  std::vector<uint8_t> u8 = {0, 200, 255};
  CHECK(run<int32_t>(castSpec(DType::U8, DType::I32, 3), u8) == std::vector<int32_t>{0, 200, 255});
  CHECK(run<float>(castSpec(DType::U8, DType::F32, 3), u8) == std::vector<float>{0, 200, 255});
  std::vector<int8_t> i8 = {-1, -128, 5};
  CHECK(run<uint8_t>(castSpec(DType::I8, DType::U8, 3), i8) == std::vector<uint8_t>{255, 128, 5});
  CHECK(run<int64_t>(castSpec(DType::I8, DType::I64, 3), i8) == std::vector<int64_t>{-1, -128, 5});
  CHECK(run<double>(castSpec(DType::I8, DType::F64, 3), i8) == std::vector<double>{-1, -128, 5});
  std::vector<int32_t> i32 = {2049, 65519, 70000, -3};
  auto h = run<half>(castSpec(DType::I32, DType::F16, 4), i32);
  CHECK(float(h[0]) == 2048.0f); // tie to even
  CHECK(float(h[1]) == 65504.0f);
  CHECK(std::isinf(float(h[2])));
  CHECK(float(h[3]) == -3.0f);
  std::vector<int64_t> big = {(int64_t(1) << 53) + 1};
  CHECK(run<double>(castSpec(DType::I64, DType::F64, 1), big)[0] == 9007199254740992.0);
}

TEST_CASE("uint8 arithmetic is unsigned and wraps", "[codegen][elementwise]") {
  std::vector<uint8_t> a = {0, 200, 255, 7, 100, 3};
  std::vector<uint8_t> b = {1, 100, 2, 0, 200, 3};
  const size_t n = a.size();
  CHECK(run<uint8_t>(spec("Sub", DType::U8, n, 2), a, b) == std::vector<uint8_t>{255, 100, 253, 7, 156, 0});
  CHECK(run<uint8_t>(spec("Add", DType::U8, n, 2), a, b) == std::vector<uint8_t>{1, 44, 1, 7, 44, 6});
  CHECK(run<uint8_t>(spec("Mul", DType::U8, n, 2), a, b) == std::vector<uint8_t>{0, 32, 254, 0, 32, 9});
  CHECK(run<uint8_t>(spec("Div", DType::U8, n, 2), a, b) == std::vector<uint8_t>{0, 2, 127, 0, 0, 1});
  CHECK(run<uint8_t>(spec("Max", DType::U8, n, 2), a, b) == std::vector<uint8_t>{1, 200, 255, 7, 200, 3});
  CHECK(run<uint8_t>(spec("Min", DType::U8, n, 2), a, b) == std::vector<uint8_t>{0, 100, 2, 0, 100, 3});
  CHECK(run<uint8_t>(spec("Neg", DType::U8, n, 1), a) == std::vector<uint8_t>{0, 56, 1, 249, 156, 253});
  CHECK(run<uint8_t>(spec("Abs", DType::U8, n, 1), a) == a);
  CHECK(run<uint8_t>(spec("Relu", DType::U8, n, 1), a) == a);
  CHECK(run<uint8_t>(spec("Sign", DType::U8, n, 1), a) == std::vector<uint8_t>{0, 1, 1, 1, 1, 1});
  CHECK(run<uint8_t>(spec("Clip", DType::U8, n, 1, {5, 150}), a) == std::vector<uint8_t>{5, 150, 150, 7, 100, 5});
  CHECK(run<uint8_t>(spec("Clip", DType::U8, n, 1, {-10, 1e9}), a) == a); // bounds outside the type
}

TEST_CASE("Mod follows the divisor's sign, or the dividend's with fmod", "[codegen][elementwise]") {
  std::vector<int32_t> x = {-7, 7, -7, 7, 6, -6, 5, INT32_MIN, INT32_MIN};
  std::vector<int32_t> d = {3, -3, -3, 3, 3, 3, 0, -1, 3};
  const size_t n = x.size();
  CHECK(run<int32_t>(spec("Mod", DType::I32, n, 2, {0}), x, d) ==
        std::vector<int32_t>{2, -2, -1, 1, 0, 0, 0, 0, 1});
  CHECK(run<int32_t>(spec("Mod", DType::I32, n, 2, {1}), x, d) ==
        std::vector<int32_t>{-1, 1, -1, 1, 0, 0, 0, 0, -2});
  std::vector<int8_t> x8 = {-128, 127, -5};
  std::vector<int8_t> d8 = {7, -7, 127};
  CHECK(run<int8_t>(spec("Mod", DType::I8, 3, 2, {0}), x8, d8) == std::vector<int8_t>{5, -6, 122});
  std::vector<uint8_t> xu = {250, 5, 255};
  std::vector<uint8_t> du = {7, 0, 16};
  CHECK(run<uint8_t>(spec("Mod", DType::U8, 3, 2, {0}), xu, du) == std::vector<uint8_t>{5, 0, 15});
  std::vector<float> xf = {-7.5f, 7.5f, -7.5f, 4.0f};
  std::vector<float> df = {2.0f, -2.0f, -2.0f, 2.0f};
  CHECK(run<float>(spec("Mod", DType::F32, 4, 2, {1}), xf, df) == std::vector<float>{-1.5f, 1.5f, -1.5f, 0.0f});
  CHECK(run<float>(spec("Mod", DType::F32, 4, 2, {0}), xf, df) == std::vector<float>{0.5f, -0.5f, -1.5f, 0.0f});
  std::vector<half> xh = {half(-4.3f), half(7.25f)};
  std::vector<half> dh = {half(2.1f), half(-2.0f)};
  auto mh = run<half>(spec("Mod", DType::F16, 2, 2, {1}), xh, dh);
  CHECK(bitsOf(mh[0]) == bitsOf(half(std::fmod(float(xh[0]), float(dh[0])))));
  CHECK(float(mh[1]) == 1.25f);
}

TEST_CASE("integer Pow is exact and wraps, mixed-type Pow", "[codegen][elementwise]") {
  std::vector<int32_t> x = {3, 2, 2, -2, 1, -1, -1, 2, 0, 5, 7};
  std::vector<int32_t> e = {4, 31, 32, 3, -5, -3, -4, -1, 0, 0, 11};
  auto p = run<int32_t>(spec("Pow", DType::I32, x.size(), 2), x, e);
  CHECK(p == std::vector<int32_t>{81, INT32_MIN, 0, -8, 1, -1, 1, 0, 1, 1, int32_t(1977326743)});
  std::vector<int64_t> x64 = {3, -3};
  std::vector<int64_t> e64 = {40, 39};
  uint64_t want = 1;
  for (int i = 0; i < 40; ++i)
    want *= 3; // wraps modulo 2^64
  auto p64 = run<int64_t>(spec("Pow", DType::I64, 2, 2), x64, e64);
  CHECK(uint64_t(p64[0]) == want);
  CHECK(p64[1] == -4052555153018976267); // -3^39 fits
  // float base, integer exponent
  ElementwiseSpec fi = spec("Pow", DType::F32, 3, 2);
  fi.inputDTypes = {DType::F32, DType::I64};
  CHECK(run<float>(fi, std::vector<float>{2, 2, -3}, std::vector<int64_t>{3, -2, 3}) ==
        std::vector<float>{8, 0.25f, -27});
  // integer base, float exponent: computed in double, truncated
  ElementwiseSpec iff = spec("Pow", DType::I32, 3, 2);
  iff.inputDTypes = {DType::I32, DType::F32};
  CHECK(run<int32_t>(iff, std::vector<int32_t>{4, 2, 3}, std::vector<float>{0.5f, -1.0f, 2.0f}) ==
        std::vector<int32_t>{2, 0, 9});
}

TEST_CASE("comparisons give bool bytes, NaN compares false", "[codegen][elementwise]") {
  std::vector<float> a = {1, 2, std::nanf(""), 3, -0.0f};
  std::vector<float> b = {2, 2, 1, std::nanf(""), 0.0f};
  using V = std::vector<uint8_t>;
  CHECK(run<uint8_t>(spec("Less", DType::F32, 5, 2), a, b) == V{1, 0, 0, 0, 0});
  CHECK(run<uint8_t>(spec("LessOrEqual", DType::F32, 5, 2), a, b) == V{1, 1, 0, 0, 1});
  CHECK(run<uint8_t>(spec("Greater", DType::F32, 5, 2), a, b) == V{0, 0, 0, 0, 0});
  CHECK(run<uint8_t>(spec("GreaterOrEqual", DType::F32, 5, 2), a, b) == V{0, 1, 0, 0, 1});
  CHECK(run<uint8_t>(spec("Equal", DType::F32, 5, 2), a, b) == V{0, 1, 0, 0, 1});
  std::vector<uint8_t> u = {200, 100, 0};
  std::vector<uint8_t> v = {100, 200, 0};
  CHECK(run<uint8_t>(spec("Greater", DType::U8, 3, 2), u, v) == V{1, 0, 0}); // unsigned
  std::vector<int8_t> s = {-56, 100, 0};
  std::vector<int8_t> t = {100, -56, 0};
  CHECK(run<uint8_t>(spec("Greater", DType::I8, 3, 2), s, t) == V{0, 1, 0}); // signed
  CHECK(run<uint8_t>(spec("GreaterOrEqual", DType::I8, 3, 2), s, t) == V{0, 1, 1});
  std::vector<int64_t> l = {INT64_MIN, 5};
  std::vector<int64_t> m = {INT64_MAX, 5};
  CHECK(run<uint8_t>(spec("Less", DType::I64, 2, 2), l, m) == V{1, 0});
  CHECK(run<uint8_t>(spec("Equal", DType::I64, 2, 2), l, m) == V{0, 1});
  std::vector<uint8_t> p = {0, 0, 1, 1, 2};
  std::vector<uint8_t> q = {0, 1, 0, 1, 1};
  CHECK(run<uint8_t>(spec("Equal", DType::Bool, 5, 2), p, q) == V{1, 0, 0, 1, 1}); // 2 reads as true
}

TEST_CASE("logical ops, Not, IsNaN, IsInf, shifts", "[codegen][elementwise]") {
  using V = std::vector<uint8_t>;
  V a = {0, 0, 1, 1, 7};
  V b = {0, 1, 0, 1, 1};
  CHECK(run<uint8_t>(spec("And", DType::Bool, 5, 2), a, b) == V{0, 0, 0, 1, 1});
  CHECK(run<uint8_t>(spec("Or", DType::Bool, 5, 2), a, b) == V{0, 1, 1, 1, 1});
  CHECK(run<uint8_t>(spec("Xor", DType::Bool, 5, 2), a, b) == V{0, 1, 1, 0, 0});
  CHECK(run<uint8_t>(spec("Not", DType::Bool, 5, 1), a) == V{1, 1, 0, 0, 0});
  std::vector<float> f = {1, std::nanf(""), INFINITY, -INFINITY, -0.0f};
  CHECK(run<uint8_t>(spec("IsNaN", DType::F32, 5, 1), f) == V{0, 1, 0, 0, 0});
  CHECK(run<uint8_t>(spec("IsInf", DType::F32, 5, 1, {1, 1}), f) == V{0, 0, 1, 1, 0});
  CHECK(run<uint8_t>(spec("IsInf", DType::F32, 5, 1, {1, 0}), f) == V{0, 0, 1, 0, 0});
  CHECK(run<uint8_t>(spec("IsInf", DType::F32, 5, 1, {0, 1}), f) == V{0, 0, 0, 1, 0});
  std::vector<half> h = {half(1), half(NAN), half(INFINITY)};
  CHECK(run<uint8_t>(spec("IsNaN", DType::F16, 3, 1), h) == V{0, 1, 0});
  V x = {1, 1, 200, 200, 255};
  V n = {7, 8, 3, 9, 0};
  CHECK(run<uint8_t>(spec("ShiftLeft", DType::U8, 5, 2), x, n) == V{128, 0, 64, 0, 255});
  CHECK(run<uint8_t>(spec("ShiftRight", DType::U8, 5, 2), x, n) == V{0, 0, 25, 0, 255});
  std::vector<int32_t> s = {-16, -1, 16, 1};
  std::vector<int32_t> k = {2, 40, 2, 31};
  CHECK(run<int32_t>(spec("ShiftRight", DType::I32, 4, 2), s, k) == std::vector<int32_t>{-4, -1, 4, 0});
  CHECK(run<int32_t>(spec("ShiftLeft", DType::I32, 4, 2), s, k) == std::vector<int32_t>{-64, 0, 64, INT32_MIN});
}

TEST_CASE("Where selects raw elements of any dtype with a broadcast condition", "[codegen][elementwise]") {
  std::vector<uint8_t> c = {1, 0, 2, 0};
  ElementwiseSpec s = spec("Where", DType::F16, 4, 3);
  std::vector<uint16_t> x = {0x7e01, 0x3c00, 0xfc00, 0x0001}; // NaN payload, 1, -inf, subnormal
  std::vector<uint16_t> y = {0x0000, 0x8000, 0x4000, 0x7c00};
  CHECK(run<uint16_t>(s, c, x, y) == std::vector<uint16_t>{0x7e01, 0x8000, 0xfc00, 0x7c00});
  ElementwiseSpec l = spec("Where", DType::I64, 4, 3);
  l.scalarInput = {true, false, true};
  CHECK(run<int64_t>(l, std::vector<uint8_t>{0}, std::vector<int64_t>{1, 2, 3, 4}, std::vector<int64_t>{-9}) ==
        std::vector<int64_t>{-9, -9, -9, -9});
  ElementwiseSpec b = spec("Where", DType::Bool, 4, 3);
  CHECK(run<uint8_t>(b, c, std::vector<uint8_t>{1, 1, 0, 0}, std::vector<uint8_t>{0, 1, 1, 0}) ==
        std::vector<uint8_t>{1, 1, 0, 0});
}

TEST_CASE("variadic Max/Min/Mean read any number of inputs", "[codegen][elementwise]") {
  std::vector<int16_t> a = {1, -5, 300}, b = {2, -7, 299}, c = {0, -6, 301};
  CHECK(run<int16_t>(spec("Max", DType::I16, 3, 3), a, b, c) == std::vector<int16_t>{2, -5, 301});
  CHECK(run<int16_t>(spec("Min", DType::I16, 3, 3), a, b, c) == std::vector<int16_t>{0, -7, 299});
  std::vector<float> n = {std::nanf(""), 1, -0.0f}, o = {1, std::nanf(""), 0.0f};
  auto mx = run<float>(spec("Max", DType::F32, 3, 2), n, o);
  auto mn = run<float>(spec("Min", DType::F32, 3, 2), n, o);
  CHECK((std::isnan(mx[0]) && std::isnan(mx[1]) && std::isnan(mn[0]) && std::isnan(mn[1]))); // NaN propagates
  CHECK((!std::signbit(mx[2]) && std::signbit(mn[2])));                                      // +0 > -0
  std::vector<double> x = {1, 2}, y = {2, 4}, z = {6, 0};
  CHECK(run<double>(spec("Mean", DType::F64, 2, 3), x, y, z) == std::vector<double>{3, 2});
  CHECK_THROWS_WITH(VertexCodegen().getOrCreate(spec("Mean", DType::I32, 2, 2)),
                    "codegen: Mean not supported for int32");
}

TEST_CASE("unsigned 16/32/64-bit types are unsigned throughout", "[codegen][elementwise]") {
  // Named at run time so the test builds whether or not these dtypes exist.
  const auto u16 = dtypeFromName("uint16"), u32 = dtypeFromName("uint32"), u64 = dtypeFromName("uint64");
  if (!u16 || !u32 || !u64)
    return;
  std::vector<float> f = {3e9f, -1.0f, std::nanf(""), 7.9f, 1e20f};
  CHECK(run<uint32_t>(castSpec(DType::F32, *u32, 5), f) ==
        std::vector<uint32_t>{3000000000u, 4294967295u, 0, 7, uint32_t(UINT64_MAX)});
  std::vector<double> d = {1.8e19, -2.0, 5.5};
  CHECK(run<uint64_t>(castSpec(DType::F64, *u64, 3), d) == std::vector<uint64_t>{18000000000000000000ull, UINT64_MAX - 1, 5});
  std::vector<uint64_t> a = {UINT64_MAX, 10, 7}, b = {1, 0, 3};
  CHECK(run<uint64_t>(spec("Max", *u64, 3, 2), a, b) == std::vector<uint64_t>{UINT64_MAX, 10, 7});
  CHECK(run<uint64_t>(spec("Div", *u64, 3, 2), a, b) == std::vector<uint64_t>{UINT64_MAX, 0, 2});
  CHECK(run<uint8_t>(spec("Greater", *u64, 3, 2), a, b) == std::vector<uint8_t>{1, 1, 1});
  std::vector<uint16_t> x = {65535, 3}, y = {2, 65535};
  CHECK(run<uint16_t>(spec("Mod", *u16, 2, 2, {0}), x, y) == std::vector<uint16_t>{1, 3});
  CHECK(run<uint16_t>(spec("Add", *u16, 2, 2), x, y) == std::vector<uint16_t>{1, 2});
  CHECK(run<uint32_t>(castSpec(*u16, *u32, 2), x) == std::vector<uint32_t>{65535, 3});
  CHECK(run<float>(castSpec(*u64, DType::F32, 3), a) == std::vector<float>{1.8446744e19f, 10, 7});
}
