// Shared helpers for codelets: freestanding (compiled by clang-19 to bitcode,
// see README.md), so no libc and no templates from the standard library.
#pragma once
#include <stddef.h>
#include <stdint.h>

#define POPC_CODELET extern "C" __attribute__((always_inline))

namespace popc_codelets {

// Doubles are passed as int64 bit patterns (the ABI has only int64 scalars).
inline double asDouble(int64_t bits) { return __builtin_bit_cast(double, bits); }

// IEEE half stored as raw bits: codelets only compare and copy halves, so they
// convert in software rather than relying on the host's half support.
inline float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else { // subnormal: normalise
      int e = -1;
      uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while ((m & 0x400u) == 0);
      bits = sign | uint32_t(127 - 15 - e) << 23 | (m & 0x3ffu) << 13;
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  return __builtin_bit_cast(float, bits);
}

// A comparable value of each element type (halves widened to float).
template <typename T> inline T key(T v) { return v; }
// float16 elements: raw bits, compared as float.
struct Half {
  uint16_t bits;
};
inline float key(Half h) { return halfToFloat(h.bits); }

inline bool isNan(float v) { return v != v; }
inline bool isNan(double v) { return v != v; }
template <typename T> inline bool isNan(T) { return false; }

} // namespace popc_codelets

// Instantiates MACRO(type, suffix) for every element type the IR has.
#define POPC_FOR_EACH_DTYPE(MACRO)                                                                      \
  MACRO(float, f32)                                                                                     \
  MACRO(double, f64)                                                                                    \
  MACRO(popc_codelets::Half, f16)                                                                       \
  MACRO(int8_t, i8)                                                                                     \
  MACRO(int16_t, i16)                                                                                   \
  MACRO(int32_t, i32)                                                                                   \
  MACRO(int64_t, i64)                                                                                   \
  MACRO(uint8_t, u8)                                                                                    \
  MACRO(uint16_t, u16)                                                                                  \
  MACRO(uint32_t, u32)                                                                                  \
  MACRO(uint64_t, u64)                                                                                  \
  MACRO(bool, bool)

// Element types by size, for ops that only move elements.
#define POPC_FOR_EACH_ELEMENT_SIZE(MACRO)                                                               \
  MACRO(uint8_t, 1)                                                                                     \
  MACRO(uint16_t, 2)                                                                                    \
  MACRO(uint32_t, 4)                                                                                    \
  MACRO(uint64_t, 8)
