// Internal to compiler/codegen: how the MatMul and Conv kernels read an
// operand. A float operand is read as stored. An integer one (kernels.h
// IntegerOperands) is widened to the int32 accumulator and centred on its
// zero point; lanes that are off (padding, tails) then read 0, not -zero.
#pragma once
#include "compiler/codegen/emitter.h"
#include "compiler/codegen/kernels.h"

#include <optional>

namespace popc::codegen::detail {

struct Operand {
  DType stored = DType::F32; // element type in the field
  DType acc = DType::F32;    // accumulator type the value is read as
  int32_t zero = 0;

  // `accType` read as stored, or the integer operand (first or second) of `integer`.
  static Operand of(DType accType, const std::optional<IntegerOperands> &integer, bool second);

  Value *load(Emitter &em, Value *base, Value *index) const;
  Value *loadLanes(Emitter &em, Value *base, Value *index, const std::vector<bool> &lanes, int64_t stride = 1,
                   Value *enable = nullptr) const;

private:
  Value *widen(Emitter &em, Value *v) const;
};

// Validates the integer operands of a kernel whose accumulator is `dtype`.
void validateIntegerOperands(const char *kernel, DType dtype, const IntegerOperands &integer);

} // namespace popc::codegen::detail
