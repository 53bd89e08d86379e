#include "compiler/codegen/operand.h"

#include "compiler/codegen/elementwise_math.h"
#include "support/error.h"

#include <fmt/format.h>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

// `scalar` as a vector like `like`, or as it is when `like` is a scalar.
Type *shaped(Type *scalar, Type *like) {
  if (auto *vt = dyn_cast<FixedVectorType>(like))
    return FixedVectorType::get(scalar, vt->getNumElements());
  return scalar;
}

// float32 compute values rounded to float16 and back.
Value *roundToHalf(IRBuilder<> &b, Value *v) {
  return b.CreateFPExt(b.CreateFPTrunc(v, shaped(b.getHalfTy(), v->getType())), v->getType());
}

// A compute value as the bits a field of `stored` type holds.
Value *narrow(Emitter &em, DType stored, Value *v) {
  if (stored != DType::F16)
    return v;
  IRBuilder<> &b = em.b();
  return b.CreateBitCast(b.CreateFPTrunc(v, shaped(b.getHalfTy(), v->getType())),
                         shaped(b.getInt16Ty(), v->getType()));
}

} // namespace

Operand Operand::of(DType dtype) { return {dtype, computeDType(dtype), 0}; }

Operand Operand::of(DType dtype, const std::optional<IntegerOperands> &integer, bool second) {
  if (!integer)
    return of(dtype);
  return {second ? integer->b : integer->a, dtype, second ? integer->bZero : integer->aZero};
}

Value *Operand::widen(Emitter &em, Value *v) const {
  IRBuilder<> &b = em.b();
  if (stored == compute)
    return v;
  if (stored == DType::F16)
    return b.CreateFPExt(b.CreateBitCast(v, shaped(b.getHalfTy(), v->getType())),
                         shaped(em.type(compute), v->getType()));
  return b.CreateIntCast(v, shaped(em.type(compute), v->getType()), /*isSigned=*/stored != DType::U8);
}

Value *Operand::load(Emitter &em, Value *base, Value *index) const {
  Value *v = widen(em, em.load(stored, base, index));
  return zero ? em.b().CreateSub(v, em.constant(compute, zero)) : v;
}

Value *Operand::loadLanes(Emitter &em, Value *base, Value *index, const std::vector<bool> &lanes, int64_t stride,
                          Value *enable) const {
  Value *v = widen(em, em.loadLanes(stored, base, index, lanes, stride, enable));
  if (!zero)
    return v;
  // Subtract the zero point only where a lane was read: an unread lane is a
  // padding element, whose centred value is 0.
  std::vector<Constant *> zeros;
  for (bool on : lanes)
    zeros.push_back(ConstantInt::get(em.type(compute), on ? uint64_t(int64_t(zero)) : 0, true));
  Value *z = ConstantVector::get(zeros);
  if (enable)
    z = em.b().CreateSelect(enable, z, Constant::getNullValue(z->getType()));
  return em.b().CreateSub(v, z);
}

Value *Accumulator::mulAdd(Emitter &em, Value *a, Value *b, Value *c) const {
  Value *r = em.mulAdd(compute, a, b, c);
  return halfPartials ? roundToHalf(em.b(), r) : r;
}

Value *Accumulator::add(Emitter &em, Value *x, Value *y) const {
  Value *r = em.add(compute, x, y);
  return halfPartials ? roundToHalf(em.b(), r) : r;
}

void storeResult(Emitter &em, DType stored, Value *v, Value *base, Value *index) {
  em.store(stored, narrow(em, stored, v), base, index);
}

void storeResultLanes(Emitter &em, DType stored, Value *v, Value *base, Value *index, const std::vector<bool> &lanes) {
  em.storeLanes(stored, narrow(em, stored, v), base, index, lanes);
}

void validateIntegerOperands(const char *kernel, DType dtype, const IntegerOperands &integer) {
  auto quantized = [](DType t) { return t == DType::I8 || t == DType::U8; };
  if (dtype != DType::I32)
    fail("codegen: integer {} accumulates in int32, not {}", kernel, dtypeName(dtype));
  if (!quantized(integer.a) || !quantized(integer.b))
    fail("codegen: integer {} operands are int8 or uint8, not {} and {}", kernel, dtypeName(integer.a),
         dtypeName(integer.b));
}

std::string integerSuffix(const IntegerOperands &integer) {
  return fmt::format("_{}z{}_{}z{}", dtypeName(integer.a), integer.aZero, dtypeName(integer.b), integer.bZero);
}

} // namespace popc::codegen::detail
