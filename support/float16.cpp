#include "support/float16.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace popc {

float halfToFloat(uint16_t h) {
  const uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float f;
  if (exp == 0)
    f = std::ldexp(float(mant), -24);
  else if (exp == 31)
    f = mant ? std::numeric_limits<float>::quiet_NaN() : std::numeric_limits<float>::infinity();
  else
    f = std::ldexp(float(mant | 0x400), int(exp) - 25);
  return (h & 0x8000) ? -f : f;
}

uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint16_t sign = uint16_t((x >> 16) & 0x8000);
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000)
    return sign | 0x7e00; // NaN
  if (abs >= 0x477ff000)
    return sign | 0x7c00; // overflow (incl. inf) after rounding
  if (abs < 0x38800000) { // subnormal half (or zero)
    const float a = std::fabs(f) * 16777216.0f; // / 2^-24
    return sign | uint16_t(std::nearbyint(a));
  }
  const uint32_t mant = abs & 0x7fffff;
  uint32_t h = ((abs >> 23) - 112) << 10 | (mant >> 13);
  const uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
    ++h;
  return sign | uint16_t(h);
}

float bfloat16ToFloat(uint16_t b) {
  const uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

uint16_t floatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000)
    return uint16_t((x >> 16) | 0x40); // NaN: keep the sign, force quiet
  x += 0x7fff + ((x >> 16) & 1);       // round to nearest even (carries into the exponent, up to inf)
  return uint16_t(x >> 16);
}

} // namespace popc
