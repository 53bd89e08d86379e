// Elementwise lowerings end to end (IR → device graph → popef → runtime) with
// mixed dtypes, three-way broadcasting, legacy (opset < 7) broadcast
// attributes and Clip with run-time bounds, on a few tiles so outputs split.
#include "test/unit/lib/lib_test_util.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace popc;

namespace {

using lib::test::bytesOf;
using lib::test::Model;
using lib::test::valuesOf;

std::vector<float> iota(size_t n, float start = 0, float step = 1) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = start + step * float(i);
  return v;
}

} // namespace

TEST_CASE("opset 6 Add/Mul broadcast B at `axis`, PRelu-6 slope is per channel", "[lib][elementwise]") {
  Model m(6);
  m.input("a", DType::F32, {2, 3, 4}, iota(24));
  m.input("c", DType::F32, {3}, std::vector<float>{100, 200, 300});
  m.input("r", DType::F32, {2, 1}, std::vector<float>{1000, 2000});
  m.constant("k", DType::F32, {4}, std::vector<float>{1, 2, 3, 4});
  m.op("Add", {"a", "c"}, "ac", {{"broadcast", int64_t(1)}, {"axis", int64_t(1)}}); // c along dim 1
  m.op("Mul", {"a", "k"}, "ak", {{"broadcast", int64_t(1)}});                       // trailing
  m.input("x", DType::F32, {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  m.op("Sub", {"x", "r"}, "xr", {{"broadcast", int64_t(1)}, {"axis", int64_t(0)}}); // [2,1] at axis 0
  m.input("p", DType::F32, {1, 3, 2}, std::vector<float>{-1, 1, -2, 2, -3, 3});
  m.constant("slope", DType::F32, {3}, std::vector<float>{0.5f, 0.25f, 2.0f});
  m.op("PRelu", {"p", "slope"}, "pr");
  CHECK(m.info("ac").shape == Shape{2, 3, 4});
  auto out = m.run({"ac", "ak", "xr", "pr"});
  auto ac = valuesOf<float>(out["ac"].data), ak = valuesOf<float>(out["ak"].data);
  for (int i = 0; i < 24; ++i) {
    CHECK(ac[i] == float(i) + 100.0f * float((i / 4) % 3 + 1));
    CHECK(ak[i] == float(i) * float(i % 4 + 1));
  }
  CHECK(valuesOf<float>(out["xr"].data) == std::vector<float>{-999, -998, -997, -1996, -1995, -1994});
  CHECK(valuesOf<float>(out["pr"].data) == std::vector<float>{-0.5f, 1, -0.5f, 2, -6, 3});

  Model bad(6);
  bad.input("a", DType::F32, {2, 3}, iota(6));
  bad.input("b", DType::F32, {3}, iota(3));
  CHECK_THROWS_WITH(bad.op("Add", {"a", "b"}, "y", {{"broadcast", int64_t(1)}, {"axis", int64_t(0)}}),
                    Catch::Contains("does not broadcast to A [2,3]"));
}

TEST_CASE("Where, comparisons and Cast chain across dtypes and tiles", "[lib][elementwise]") {
  const size_t n = 3000; // several tiles, several workers per tile
  Model m;
  std::vector<int64_t> big(n);
  for (size_t i = 0; i < n; ++i)
    big[i] = int64_t(i) * 37 - 50000;
  m.input("i", DType::I64, {int64_t(n)}, big);
  m.constant("zero", DType::I64, {}, std::vector<int64_t>{0});
  m.op("Less", {"i", "zero"}, "neg");                          // bool
  m.op("Cast", {"i"}, "h", {{"to", int64_t(10)}});             // int64 → float16
  m.op("Cast", {"h"}, "f", {{"to", int64_t(1)}});              // float16 → float32
  m.constant("minus", DType::F32, {}, std::vector<float>{-1});
  m.op("Where", {"neg", "minus", "f"}, "w");                   // scalar X, vector Y
  m.op("Cast", {"neg"}, "negi", {{"to", int64_t(6)}});         // bool → int32
  auto out = m.run({"w", "negi", "h"});
  auto w = valuesOf<float>(out["w"].data);
  auto negi = valuesOf<int32_t>(out["negi"].data);
  auto h = valuesOf<_Float16>(out["h"].data);
  REQUIRE(w.size() == n);
  for (size_t i = 0; i < n; ++i) {
    const float asHalf = float(_Float16(float(big[i])));
    CHECK(float(h[i]) == asHalf);
    CHECK(w[i] == (big[i] < 0 ? -1.0f : asHalf));
    CHECK(negi[i] == (big[i] < 0 ? 1 : 0));
  }
}

TEST_CASE("three-way Where broadcast, variadic Mean/Max with broadcast, Clip with run-time bounds",
          "[lib][elementwise]") {
  Model m;
  m.input("c", DType::Bool, {2, 1}, std::vector<uint8_t>{1, 0});
  m.input("x", DType::I32, {1, 3}, std::vector<int32_t>{1, 2, 3});
  m.input("y", DType::I32, {}, std::vector<int32_t>{-7});
  m.op("Where", {"c", "x", "y"}, "w");
  m.input("a", DType::F32, {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  m.input("b", DType::F32, {3}, std::vector<float>{10, 20, 30});
  m.input("s", DType::F32, {1}, std::vector<float>{4});
  m.op("Mean", {"a", "b", "s"}, "mean");
  m.op("Max", {"a", "s"}, "max");
  m.input("lo", DType::F32, {}, std::vector<float>{2.5f});
  m.op("Clip", {"a", "lo", ""}, "clip_lo");
  m.constant("hi", DType::F32, {}, std::vector<float>{4.5f});
  m.op("Clip", {"a", "lo", "hi"}, "clip_both");
  m.input("u", DType::U8, {4}, std::vector<uint8_t>{0, 100, 200, 255});
  m.input("umin", DType::U8, {}, std::vector<uint8_t>{50});
  m.input("umax", DType::U8, {}, std::vector<uint8_t>{210});
  m.op("Clip", {"u", "umin", "umax"}, "uclip");
  CHECK(m.info("w").shape == Shape{2, 3});
  auto out = m.run({"w", "mean", "max", "clip_lo", "clip_both", "uclip"});
  CHECK(valuesOf<int32_t>(out["w"].data) == std::vector<int32_t>{1, 2, 3, -7, -7, -7});
  auto mean = valuesOf<float>(out["mean"].data);
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b = {10, 20, 30};
  for (int i = 0; i < 6; ++i)
    CHECK(mean[i] == Approx((a[i] + b[i % 3] + 4) / 3));
  CHECK(valuesOf<float>(out["max"].data) == std::vector<float>{4, 4, 4, 4, 5, 6});
  CHECK(valuesOf<float>(out["clip_lo"].data) == std::vector<float>{2.5f, 2.5f, 3, 4, 5, 6});
  CHECK(valuesOf<float>(out["clip_both"].data) == std::vector<float>{2.5f, 2.5f, 3, 4, 4.5f, 4.5f});
  CHECK(valuesOf<uint8_t>(out["uclip"].data) == std::vector<uint8_t>{50, 100, 200, 210});
}
