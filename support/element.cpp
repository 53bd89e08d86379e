#include "support/element.h"

#include "support/float16.h"

#include <cstring>

namespace popc {

namespace {

template <typename T> void put(uint8_t *p, T v) { std::memcpy(p, &v, sizeof(T)); }

template <typename V> void store(DType t, uint8_t *p, V v) {
  switch (t) {
  case DType::F32: put<float>(p, float(v)); break;
  case DType::F64: put<double>(p, double(v)); break;
  case DType::F16: put<uint16_t>(p, floatToHalf(float(v))); break;
  case DType::BF16: put<uint16_t>(p, floatToBfloat16(float(v))); break;
  case DType::I8: put<int8_t>(p, int8_t(v)); break;
  case DType::I16: put<int16_t>(p, int16_t(v)); break;
  case DType::I32: put<int32_t>(p, int32_t(v)); break;
  case DType::I64: put<int64_t>(p, int64_t(v)); break;
  case DType::U8: put<uint8_t>(p, uint8_t(v)); break;
  case DType::U16: put<uint16_t>(p, uint16_t(v)); break;
  case DType::U32: put<uint32_t>(p, uint32_t(v)); break;
  case DType::U64: put<uint64_t>(p, uint64_t(v)); break;
  case DType::Bool: put<uint8_t>(p, uint8_t(v != 0)); break;
  }
}

} // namespace

void storeElement(DType t, uint8_t *p, double v) { store(t, p, v); }
void storeElement(DType t, uint8_t *p, int64_t v) { store(t, p, v); }

} // namespace popc
