// Host-side reading of tensor bytes for control flow and printing: the
// predicate of If / RepeatWhileTrue / Switch, and Poplar's PrintTensor text.
#pragma once
#include "support/dtype.h"

#include <cstdint>
#include <span>
#include <string>

namespace popc::runtime {

// The element at `raw` as an integer: floats truncated toward zero, NaN reads
// as 1 (true), unsigned 64-bit reinterpreted.
int64_t scalarAsInt(DType dtype, const uint8_t *raw);

// Poplar's PrintTensor format: "{1,1.5,2}"; a matrix or higher one row per
// line, nested braces indented by depth; "{}" without elements. `bytes` holds
// the tensor in row-major order. float16 prints as its bits (0x3c00).
std::string formatTensor(DType dtype, const Shape &shape, std::span<const uint8_t> bytes);

} // namespace popc::runtime
