#include "formats/npz/compare.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

using namespace popc;

namespace {
template <typename T> npz::Array arr(DType dtype, Shape shape, std::vector<T> values) {
  return npz::makeArray(dtype, std::move(shape), values.data());
}
npz::CompareResult cmp(const npz::Array &a, const npz::Array &e, npz::Tolerance tol = {}) {
  return npz::compareArrays(npz::view(a), npz::view(e), tol);
}
} // namespace

TEST_CASE("compare: floats within rtol/atol, worst element reported", "[npz][compare]") {
  auto e = arr<float>(DType::F32, {2, 2}, {1, 2, 3, 4});
  CHECK(cmp(arr<float>(DType::F32, {2, 2}, {1, 2.001f, 3, 4}), e).ok);
  auto r = cmp(arr<float>(DType::F32, {2, 2}, {1.1f, 2, 3, 5}), e);
  CHECK_FALSE(r.ok);
  CHECK(r.mismatches == 2);
  CHECK(r.message.find("worst at [1,1]: 5 vs 4") != std::string::npos);
  CHECK(r.message.find("abs err 1") != std::string::npos);
  CHECK(r.message.find("rel err 0.25") != std::string::npos);
}

TEST_CASE("compare: NaN equals NaN unless disabled, infinities exact", "[npz][compare]") {
  auto e = arr<float>(DType::F32, {3}, {NAN, INFINITY, 1});
  auto a = arr<float>(DType::F32, {3}, {NAN, INFINITY, 1});
  CHECK(cmp(a, e).ok);
  CHECK_FALSE(cmp(a, e, {1e-3, 1e-5, false}).ok);
  CHECK_FALSE(cmp(arr<float>(DType::F32, {3}, {NAN, -INFINITY, 1}), e).ok);
  CHECK_FALSE(cmp(arr<float>(DType::F32, {3}, {0, INFINITY, 1}), e).ok);
}

TEST_CASE("compare: float16 decoded", "[npz][compare]") {
  // 0x3c00 = 1.0, 0x4000 = 2.0, 0x3c01 = 1.0009765625, 0x7e00 = NaN
  auto e = arr<uint16_t>(DType::F16, {3}, {0x3c00, 0x4000, 0x7e00});
  CHECK(cmp(arr<uint16_t>(DType::F16, {3}, {0x3c01, 0x4000, 0x7e00}), e, {1e-3, 1e-5, true}).ok);
  auto r = cmp(arr<uint16_t>(DType::F16, {3}, {0x4000, 0x4000, 0x7e00}), e);
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("2 vs 1") != std::string::npos);
}

TEST_CASE("compare: integers and bool exact, dtype and shape must match", "[npz][compare]") {
  auto e = arr<int64_t>(DType::I64, {2}, {(int64_t(1) << 60) + 1, 5});
  CHECK(cmp(arr<int64_t>(DType::I64, {2}, {(int64_t(1) << 60) + 1, 5}), e, {1, 1, true}).ok);
  auto r = cmp(arr<int64_t>(DType::I64, {2}, {int64_t(1) << 60, 5}), e, {1, 1, true});
  CHECK_FALSE(r.ok); // differs in the last bit: exact despite huge tolerances
  CHECK(r.message.find("(exact)") != std::string::npos);
  CHECK(cmp(arr<uint8_t>(DType::Bool, {2}, {1, 0}), arr<uint8_t>(DType::Bool, {2}, {1, 0})).ok);
  CHECK_FALSE(cmp(arr<uint8_t>(DType::Bool, {2}, {1, 1}), arr<uint8_t>(DType::Bool, {2}, {1, 0})).ok);
  auto d = cmp(arr<int32_t>(DType::I32, {2}, {1, 5}), arr<int64_t>(DType::I64, {2}, {1, 5}));
  CHECK_FALSE(d.ok);
  CHECK(d.message == "got int32 [2], expected int64 [2]");
  CHECK_FALSE(cmp(arr<float>(DType::F32, {1, 2}, {1, 2}), arr<float>(DType::F32, {2}, {1, 2})).ok);
}

TEST_CASE("compare: uint64 above 2^63 exact and printed unsigned", "[npz][compare]") {
  const uint64_t big = (uint64_t(1) << 63) + 5;
  auto e = arr<uint64_t>(DType::U64, {1}, {big});
  CHECK(cmp(arr<uint64_t>(DType::U64, {1}, {big}), e).ok);
  auto r = cmp(arr<uint64_t>(DType::U64, {1}, {big + 1}), e);
  CHECK_FALSE(r.ok);
  CHECK(r.message.find("9223372036854775814 vs 9223372036854775813") != std::string::npos);
}
