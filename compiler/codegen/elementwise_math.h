// Internal to compiler/codegen: the per-element math of elementwise vertices
// (elementwise.cpp validates specs and emits the loop around it).
//
// Values inside a vertex ("compute values"): float16 is widened to float,
// bool is i1, every other dtype is its own LLVM type (uint8 is an i8 that the
// math treats as unsigned).
#pragma once
#include "compiler/codegen/emitter.h"
#include "compiler/codegen/kernels.h"

#include <vector>

namespace popc::codegen::detail {

bool isSignedDType(DType t);  // I8 I16 I32 I64
DType computeDType(DType t);  // F16, BF16 → F32, else t

// Loads element `index` of a field of dtype t as a compute value, and stores
// one back (a float compute value is rounded to float16 when t is F16; a value
// that is already `half` is stored as is).
Value *loadValue(Emitter &em, DType t, Value *base, Value *index);
void storeValue(Emitter &em, DType t, Value *v, Value *base, Value *index);

// ONNX Cast of a compute value (see ElementwiseSpec in kernels.h). Casting to
// F16 returns a `half` value (so double → half rounds once).
Value *convert(Emitter &em, Value *v, DType from, DType to);

// The element types of one vertex after validation.
struct ElementTypes {
  std::vector<DType> in;
  DType out;
};

// op(in...) on compute values; `in` has one value per input, typed per `types`.
Value *applyOp(Emitter &em, const ElementwiseSpec &s, const ElementTypes &types, const std::vector<Value *> &in);

} // namespace popc::codegen::detail
