// The two 16-bit float formats as bits: IEEE binary16 (float16) and bfloat16
// (the upper half of a float32). C++20 has no type for either; every host-side
// reader and constant folder converts through these.
#pragma once
#include <cstdint>

namespace popc {

float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f); // round to nearest even; overflow → inf

float bfloat16ToFloat(uint16_t b);
uint16_t floatToBfloat16(float f); // round to nearest even; NaN stays a quiet NaN

} // namespace popc
