// Internal to compiler/codegen: how the MatMul and Conv kernels read their
// operands, accumulate and store. Values are computed in the accumulator's
// compute type (computeDType: float32 for float16 data), int32 for integer
// operands (kernels.h IntegerOperands).
#pragma once
#include "compiler/codegen/emitter.h"
#include "compiler/codegen/kernels.h"

#include <optional>

namespace popc::codegen::detail {

// An operand field read in the compute type: float16 is widened; an integer
// operand is widened to int32 and centred on its zero point, where lanes that
// are off (padding, tails) read 0, not -zero.
struct Operand {
  DType stored = DType::F32; // element type in the field
  DType compute = DType::F32;
  int32_t zero = 0;

  // A field of the kernel's `dtype` (C, bias), or its first or second integer operand.
  static Operand of(DType dtype);
  static Operand of(DType dtype, const std::optional<IntegerOperands> &integer, bool second);

  Value *load(Emitter &em, Value *base, Value *index) const;
  Value *loadLanes(Emitter &em, Value *base, Value *index, const std::vector<bool> &lanes, int64_t stride = 1,
                   Value *enable = nullptr) const;

private:
  Value *widen(Emitter &em, Value *v) const;
};

// The accumulator: multiply-adds in the compute type; with half partials
// (the IPU's AMP accumulating in float16) each result is rounded to float16.
struct Accumulator {
  DType compute = DType::F32;
  bool halfPartials = false;

  Value *mulAdd(Emitter &em, Value *a, Value *b, Value *c) const;
  Value *add(Emitter &em, Value *x, Value *y) const;
};

// Stores compute values to a field of `stored` type (float16 rounded once).
void storeResult(Emitter &em, DType stored, Value *v, Value *base, Value *index);
void storeResultLanes(Emitter &em, DType stored, Value *v, Value *base, Value *index, const std::vector<bool> &lanes);

// Validates the integer operands of a kernel whose accumulator is `dtype`.
void validateIntegerOperands(const char *kernel, DType dtype, const IntegerOperands &integer);
// The integer operands as a kernel name's (and key's) suffix: "_uint8z128_int8z0".
std::string integerSuffix(const IntegerOperands &integer);

} // namespace popc::codegen::detail
