#include "compiler/codegen/operand.h"

#include "support/error.h"

namespace popc::codegen::detail {

using namespace llvm;

Operand Operand::of(DType accType, const std::optional<IntegerOperands> &integer, bool second) {
  if (!integer)
    return {accType, accType, 0};
  return {second ? integer->b : integer->a, accType, second ? integer->bZero : integer->aZero};
}

Value *Operand::widen(Emitter &em, Value *v) const {
  if (stored == acc)
    return v;
  Type *to = em.type(acc);
  if (auto *vt = dyn_cast<FixedVectorType>(v->getType()))
    to = FixedVectorType::get(to, vt->getNumElements());
  return em.b().CreateIntCast(v, to, /*isSigned=*/stored != DType::U8);
}

Value *Operand::load(Emitter &em, Value *base, Value *index) const {
  Value *v = widen(em, em.load(stored, base, index));
  return zero ? em.b().CreateSub(v, em.constant(acc, zero)) : v;
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
    zeros.push_back(ConstantInt::get(em.type(acc), on ? uint64_t(int64_t(zero)) : 0, true));
  Value *z = ConstantVector::get(zeros);
  if (enable)
    z = em.b().CreateSelect(enable, z, Constant::getNullValue(z->getType()));
  return em.b().CreateSub(v, z);
}

void validateIntegerOperands(const char *kernel, DType dtype, const IntegerOperands &integer) {
  auto quantized = [](DType t) { return t == DType::I8 || t == DType::U8; };
  if (dtype != DType::I32)
    fail("codegen: integer {} accumulates in int32, not {}", kernel, dtypeName(dtype));
  if (!quantized(integer.a) || !quantized(integer.b))
    fail("codegen: integer {} operands are int8 or uint8, not {} and {}", kernel, dtypeName(integer.a),
         dtypeName(integer.b));
}

} // namespace popc::codegen::detail
