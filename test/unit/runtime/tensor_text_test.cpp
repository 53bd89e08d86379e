#include "runtime/cycle_model.h"
#include "runtime/tensor_text.h"
#include "support/float16.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

using namespace popc;
using namespace popc::runtime;

namespace {
template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}
} // namespace

TEST_CASE("formatTensor prints Poplar's PrintTensor text", "[runtime]") {
  CHECK(formatTensor(DType::F32, {3}, bytesOf(std::vector<float>{1, 1.5f, 2})) == "{1,1.5,2}");
  CHECK(formatTensor(DType::I32, {2, 2}, bytesOf(std::vector<int32_t>{1, -2, 3, 4})) == "{\n {1,-2},\n {3,4}\n}");
  CHECK(formatTensor(DType::Bool, {2}, std::vector<uint8_t>{0, 1}) == "{false,true}");
  CHECK(formatTensor(DType::F16, {1}, bytesOf(std::vector<uint16_t>{0x3c00})) == "{0x3c00}");
  CHECK(formatTensor(DType::U64, {1}, bytesOf(std::vector<uint64_t>{~uint64_t(0)})) == "{18446744073709551615}");
  CHECK(formatTensor(DType::F32, {0, 4}, {}) == "{}");
  CHECK(formatTensor(DType::I64, {}, bytesOf(std::vector<int64_t>{7})) == "7");
}

TEST_CASE("scalarAsInt reads control values as If/Switch do", "[runtime]") {
  auto f32 = bytesOf(std::vector<float>{-2.75f});
  CHECK(scalarAsInt(DType::F32, f32.data()) == -2);
  auto nan = bytesOf(std::vector<float>{std::nanf("")});
  CHECK(scalarAsInt(DType::F32, nan.data()) == 1);
  auto half = bytesOf(std::vector<uint16_t>{floatToHalf(3.5f)});
  CHECK(scalarAsInt(DType::F16, half.data()) == 3);
  auto u8 = std::vector<uint8_t>{200};
  CHECK(scalarAsInt(DType::U8, u8.data()) == 200);
  auto i8 = std::vector<uint8_t>{200};
  CHECK(scalarAsInt(DType::I8, i8.data()) == -56);
}
