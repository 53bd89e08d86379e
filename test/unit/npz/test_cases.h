// Test arrays shared with npz_cases.py: same names, shapes and value formulas.
#pragma once
#include "formats/npz/npz.h"

#include <cstring>
#include <string>

namespace popc::npz::test {

inline const DType kAllDTypes[] = {DType::F32, DType::F64, DType::F16, DType::I8,  DType::I16,
                                   DType::I32, DType::I64, DType::U8,  DType::Bool, DType::U16,
                                   DType::U32, DType::U64, DType::BF16};

template <typename T> void put(Array &a, size_t i, T v) {
  std::memcpy(a.data.data() + i * sizeof(T), &v, sizeof(T));
}

inline Array values(DType t, Shape shape) {
  Array a = makeArray(t, shape, nullptr);
  for (int64_t i = 0; i < numElements(shape); ++i) {
    switch (t) {
    case DType::F32: put<float>(a, i, i * 0.5f - 3); break;
    case DType::F64: put<double>(a, i, i * 0.25 - 7); break;
    case DType::F16: put<_Float16>(a, i, static_cast<_Float16>(i * 0.5f - 4)); break;
    case DType::I8: put<int8_t>(a, i, static_cast<int8_t>((i * 37) % 256 - 128)); break;
    case DType::I16: put<int16_t>(a, i, static_cast<int16_t>(i * 1000 - 12000)); break;
    case DType::I32: put<int32_t>(a, i, static_cast<int32_t>(i * 100000 - 1234567)); break;
    case DType::I64: put<int64_t>(a, i, i * 1000000000000 - 5); break;
    case DType::U8: put<uint8_t>(a, i, static_cast<uint8_t>((i * 29) % 256)); break;
    case DType::U16: put<uint16_t>(a, i, static_cast<uint16_t>(i * 2000)); break;
    case DType::U32: put<uint32_t>(a, i, static_cast<uint32_t>(i * 300000000u)); break;
    case DType::U64: put<uint64_t>(a, i, uint64_t(i) * 10000000000000000ull); break;
    case DType::BF16: put<uint16_t>(a, i, static_cast<uint16_t>(0x3f80 + i)); break; // 1.0 and up
    case DType::Bool: put<uint8_t>(a, i, i % 3 == 0); break;
    }
  }
  return a;
}

inline ArrayMap cases() {
  ArrayMap m;
  for (DType t : kAllDTypes)
    m["t_" + std::string(dtypeName(t))] = values(t, {2, 3, 4});
  float s = 3.5f;
  m["scalar"] = makeArray(DType::F32, {}, &s);
  m["empty"] = makeArray(DType::F32, {0, 5}, nullptr);
  m["vector"] = values(DType::I64, {7});
  return m;
}

} // namespace popc::npz::test
