// Per-element math of elementwise vertices on compute values (see
// elementwise_math.h). Everything is branch-free (selects), so the host JIT
// can vectorise the loop around it.
#include "compiler/codegen/elementwise_math.h"

#include "support/error.h"

#include <llvm/IR/Constants.h>

#include <cmath>
#include <limits>

namespace popc::codegen::detail {

using namespace llvm;
using Op = ops::Elementwise;

bool isSignedDType(DType t) { return ops::typeClass(t) == ops::kS; }
DType computeDType(DType t) { return t == DType::F16 || t == DType::BF16 ? DType::F32 : t; }

namespace {

// bfloat16 is the upper half of a float32: widening is a shift, narrowing
// rounds to nearest even in integer arithmetic (no libcall, no CPU feature),
// keeping NaNs quiet NaNs.
Value *bf16BitsToFloat(IRBuilder<> &b, Value *bits) {
  return b.CreateBitCast(b.CreateShl(b.CreateZExt(bits, b.getInt32Ty()), 16), b.getFloatTy());
}

Value *floatToBf16Bits(IRBuilder<> &b, Value *f) {
  Value *x = b.CreateBitCast(f, b.getInt32Ty());
  Value *lsb = b.CreateAnd(b.CreateLShr(x, 16), b.getInt32(1));
  Value *rounded = b.CreateLShr(b.CreateAdd(b.CreateAdd(x, b.getInt32(0x7fff)), lsb), 16);
  Value *quietNan = b.CreateOr(b.CreateLShr(x, 16), b.getInt32(0x40));
  Value *isNan = b.CreateFCmpUNO(f, f);
  return b.CreateTrunc(b.CreateSelect(isNan, quietNan, rounded), b.getInt16Ty());
}

} // namespace

Value *loadValue(Emitter &em, DType t, Value *base, Value *index) {
  IRBuilder<> &b = em.b();
  Value *raw = em.load(t, base, index);
  if (t == DType::F16)
    return b.CreateFPExt(b.CreateBitCast(raw, b.getHalfTy()), b.getFloatTy());
  if (t == DType::BF16)
    return bf16BitsToFloat(b, raw);
  if (t == DType::Bool)
    return b.CreateICmpNE(raw, b.getInt8(0));
  return raw;
}

void storeValue(Emitter &em, DType t, Value *v, Value *base, Value *index) {
  IRBuilder<> &b = em.b();
  if (t == DType::F16) {
    if (!v->getType()->isHalfTy())
      v = b.CreateFPTrunc(v, b.getHalfTy());
    v = b.CreateBitCast(v, b.getInt16Ty());
  } else if (t == DType::BF16) {
    v = floatToBf16Bits(b, v);
  } else if (t == DType::Bool) {
    v = b.CreateZExt(v, b.getInt8Ty());
  }
  em.store(t, v, base, index);
}

namespace {

unsigned bits(DType t) { return unsigned(dtypeSize(t) * 8); }

// The LLVM type of a compute value of dtype t.
Type *computeType(Emitter &em, DType t) {
  if (t == DType::Bool)
    return em.b().getInt1Ty();
  return em.type(computeDType(t));
}

// Integer constant of dtype t (two's complement of v).
Value *intConst(Emitter &em, DType t, int64_t v) {
  return ConstantInt::get(computeType(em, t), uint64_t(v), true);
}

// Float constant of the compute type of t.
Value *fconst(Emitter &em, DType t, double v) { return ConstantFP::get(computeType(em, t), v); }

Value *umaxOrSmax(Emitter &em, DType t, Value *x, Value *y, bool max) {
  IRBuilder<> &b = em.b();
  if (isFloatingPoint(t)) // NaN-propagating, like numpy.maximum and PyTorch
    return em.binaryIntrinsic(max ? Intrinsic::maximum : Intrinsic::minimum, x, y);
  bool u = !isSignedDType(t);
  return b.CreateBinaryIntrinsic(max ? (u ? Intrinsic::umax : Intrinsic::smax) : (u ? Intrinsic::umin : Intrinsic::smin),
                                 x, y);
}

// x < y (ordered for floats: false with NaN).
Value *less(Emitter &em, DType t, Value *x, Value *y) {
  IRBuilder<> &b = em.b();
  if (isFloatingPoint(t))
    return b.CreateFCmpOLT(x, y);
  return isSignedDType(t) ? b.CreateICmpSLT(x, y) : b.CreateICmpULT(x, y);
}

// Integer x / d and x % d that never trap: d == 0 gives 0; signed x / -1 is -x
// and x % -1 is 0 (wrapping), as the IPU has no divide trap.
Value *intDivRem(Emitter &em, DType t, Value *x, Value *d, bool rem) {
  IRBuilder<> &b = em.b();
  Value *zero = intConst(em, t, 0), *one = intConst(em, t, 1);
  Value *isZero = b.CreateICmpEQ(d, zero);
  if (!isSignedDType(t)) {
    Value *safe = b.CreateSelect(isZero, one, d);
    return b.CreateSelect(isZero, zero, rem ? b.CreateURem(x, safe) : b.CreateUDiv(x, safe));
  }
  Value *isMinusOne = b.CreateICmpEQ(d, intConst(em, t, -1));
  Value *safe = b.CreateSelect(b.CreateOr(isZero, isMinusOne), one, d);
  Value *q = rem ? b.CreateSRem(x, safe) : b.CreateSDiv(x, safe);
  Value *byMinusOne = rem ? zero : b.CreateSub(zero, x);
  return b.CreateSelect(isZero, zero, b.CreateSelect(isMinusOne, byMinusOne, q));
}

// ONNX Mod. fmod: the result has the dividend's sign (C fmod); otherwise the
// divisor's (Python / numpy.mod): a non-zero remainder of the other sign gets
// the divisor added.
Value *mod(Emitter &em, DType t, Value *x, Value *d, bool fmod) {
  IRBuilder<> &b = em.b();
  if (isFloatingPoint(t)) {
    Value *r = em.libm("fmodf", {x, d});
    if (fmod)
      return r;
    Value *zero = fconst(em, t, 0);
    Value *fix = b.CreateAnd(b.CreateFCmpONE(r, zero), b.CreateXor(b.CreateFCmpOLT(r, zero), b.CreateFCmpOLT(d, zero)));
    return b.CreateSelect(fix, b.CreateFAdd(r, d), r);
  }
  Value *r = intDivRem(em, t, x, d, true);
  if (fmod || !isSignedDType(t))
    return r;
  Value *zero = intConst(em, t, 0);
  Value *fix = b.CreateAnd(b.CreateICmpNE(r, zero), b.CreateICmpSLT(b.CreateXor(r, d), zero));
  return b.CreateSelect(fix, b.CreateAdd(r, d), r);
}

// Exact integer power with wrapping: square-and-multiply over every bit of the
// exponent. Negative exponents give the truncated 1 / x^-e: 1 for x = 1,
// ±1 for x = -1, else 0.
Value *intPow(Emitter &em, DType t, Value *x, Value *e) {
  IRBuilder<> &b = em.b();
  Value *zero = intConst(em, t, 0), *one = intConst(em, t, 1);
  Value *result = one, *base = x, *rest = e;
  for (unsigned k = 0; k < bits(t); ++k) {
    Value *bit = b.CreateICmpNE(b.CreateAnd(rest, one), zero);
    result = b.CreateSelect(bit, b.CreateMul(result, base), result);
    base = b.CreateMul(base, base);
    rest = b.CreateLShr(rest, one);
  }
  if (!isSignedDType(t))
    return result;
  Value *odd = b.CreateICmpNE(b.CreateAnd(e, one), zero);
  Value *negative = b.CreateSelect(b.CreateICmpEQ(x, one), one,
                                   b.CreateSelect(b.CreateICmpEQ(x, intConst(em, t, -1)),
                                                  b.CreateSelect(odd, intConst(em, t, -1), one), zero));
  return b.CreateSelect(b.CreateICmpSLT(e, zero), negative, result);
}

// 24 random bits from (index, counter, seed): two rounds of Wellons' lowbias32
// integer hash over a golden-ratio mix of the three (wrapping uint32
// arithmetic), the top 24 bits as a non-negative int32. Counter-based, so any
// tiling of the elements draws the same numbers.
Value *randomBits(Emitter &em, Value *index, Value *counter, double seed) {
  IRBuilder<> &b = em.b();
  auto u32 = [&](uint32_t v) { return b.getInt32(v); };
  auto round = [&](Value *h) {
    h = b.CreateXor(h, b.CreateLShr(h, 16));
    h = b.CreateMul(h, u32(0x7feb352dU));
    h = b.CreateXor(h, b.CreateLShr(h, 15));
    h = b.CreateMul(h, u32(0x846ca68bU));
    return b.CreateXor(h, b.CreateLShr(h, 16));
  };
  Value *h = b.CreateAdd(b.CreateAdd(b.CreateMul(index, u32(0x9e3779b9U)), b.CreateMul(counter, u32(0x85ebca6bU))),
                         u32(uint32_t(int64_t(seed))));
  h = round(b.CreateXor(round(h), u32(0x68e31da4U)));
  return b.CreateLShr(h, 8);
}

// Shift with numpy results for any amount: amounts >= the width (or negative)
// give 0, or the sign fill for signed right shifts.
Value *shift(Emitter &em, DType t, Value *x, Value *n, bool left) {
  IRBuilder<> &b = em.b();
  Value *width = intConst(em, t, bits(t));
  Value *tooFar = b.CreateICmpUGE(n, width);
  if (!left && isSignedDType(t))
    return b.CreateAShr(x, b.CreateSelect(tooFar, intConst(em, t, bits(t) - 1), n));
  Value *safe = b.CreateSelect(tooFar, intConst(em, t, 0), n);
  return b.CreateSelect(tooFar, intConst(em, t, 0), left ? b.CreateShl(x, safe) : b.CreateLShr(x, safe));
}

// x clamped below by constant bound v (lower) or above (!lower); no-op for
// bounds outside the type (±inf, NaN, beyond an integer type's range).
Value *clipConst(Emitter &em, DType t, Value *x, double v, bool lower) {
  IRBuilder<> &b = em.b();
  if (std::isnan(v))
    return x;
  if (isFloatingPoint(t)) {
    if (std::isinf(v) && (v < 0) == lower)
      return x;
    Value *c = fconst(em, t, v);
    return b.CreateSelect(lower ? b.CreateFCmpOLT(x, c) : b.CreateFCmpOGT(x, c), c, x);
  }
  const unsigned n = bits(t);
  const bool sign = isSignedDType(t);
  const double lo = sign ? -std::ldexp(1.0, int(n) - 1) : 0.0;
  const double hi = sign ? std::ldexp(1.0, int(n) - 1) - 1 : std::ldexp(1.0, int(n)) - 1;
  v = std::trunc(v);
  if (lower ? v <= lo : v >= hi)
    return x; // every value already satisfies the bound
  v = std::min(std::max(v, lo), hi);
  // hi of a 64-bit type is 2^63 or 2^64 as a double: not convertible, so all ones.
  Value *c = v >= hi ? ConstantInt::get(computeType(em, t), APInt::getMaxValue(n).lshr(sign ? 1 : 0))
                     : ConstantInt::get(computeType(em, t), sign ? uint64_t(int64_t(v)) : uint64_t(v), sign);
  return b.CreateSelect(lower ? less(em, t, x, c) : less(em, t, c, x), c, x);
}

// The float-only ops, and the float forms of ops that also take integers
// (nullptr: applyOp has the form shared with integers).
Value *floatOp(Emitter &em, const ElementwiseSpec &s, const std::vector<Value *> &in) {
  IRBuilder<> &b = em.b();
  const DType t = s.dtype;
  const auto &p = s.params;
  Value *x = in[0];
  Value *zero = fconst(em, t, 0), *one = fconst(em, t, 1);
  auto select = [&](Value *c, Value *a, Value *o) { return b.CreateSelect(c, a, o); };
  auto clamp01 = [&](Value *v) { // NaN stays NaN
    return select(b.CreateFCmpOLT(v, zero), zero, select(b.CreateFCmpOGT(v, one), one, v));
  };
  switch (s.op) {
  case Op::Sigmoid: return b.CreateFDiv(one, b.CreateFAdd(one, em.exp(b.CreateFNeg(x))));
  case Op::Tanh: return em.libm("tanhf", {x});
  case Op::Erf: return em.libm("erff", {x});
  case Op::Exp: return em.exp(x);
  case Op::Log: return em.log(x);
  case Op::Sqrt: return em.unaryIntrinsic(Intrinsic::sqrt, x);
  case Op::Reciprocal: return b.CreateFDiv(one, x);
  case Op::Floor: return em.unaryIntrinsic(Intrinsic::floor, x);
  case Op::Ceil: return em.unaryIntrinsic(Intrinsic::ceil, x);
  case Op::Round: return em.unaryIntrinsic(Intrinsic::roundeven, x);
  case Op::Sin: return em.unaryIntrinsic(Intrinsic::sin, x);
  case Op::Cos: return em.unaryIntrinsic(Intrinsic::cos, x);
  case Op::Tan: case Op::Asin: case Op::Acos: case Op::Atan: case Op::Sinh: case Op::Cosh: case Op::Asinh:
  case Op::Acosh: case Op::Atanh: { // the libm function of the op's name: tanf, asinf, ...
    std::string name(ops::name(s.op));
    name[0] = char(std::tolower(name[0]));
    return em.libm(name + "f", {x});
  }
  case Op::LeakyRelu: return select(b.CreateFCmpOLT(x, zero), b.CreateFMul(x, fconst(em, t, p[0])), x);
  case Op::Elu:
    return select(b.CreateFCmpOLT(x, zero), b.CreateFMul(fconst(em, t, p[0]), em.libm("expm1f", {x})), x);
  case Op::Selu: {
    Value *neg = b.CreateFMul(fconst(em, t, p[0]), em.libm("expm1f", {x}));
    return b.CreateFMul(fconst(em, t, p[1]), select(b.CreateFCmpOGT(x, zero), x, neg));
  }
  case Op::Celu: { // max(0,x) + min(0, alpha*(exp(x/alpha)-1))
    Value *alpha = fconst(em, t, p[0]);
    Value *neg = b.CreateFMul(alpha, em.libm("expm1f", {b.CreateFDiv(x, alpha)}));
    return select(b.CreateFCmpOLT(x, zero), neg, x);
  }
  case Op::ThresholdedRelu: return select(b.CreateFCmpOGT(x, fconst(em, t, p[0])), x, zero);
  case Op::HardSigmoid: return clamp01(b.CreateFAdd(b.CreateFMul(x, fconst(em, t, p[0])), fconst(em, t, p[1])));
  case Op::HardSwish:
    return b.CreateFMul(x, clamp01(b.CreateFAdd(b.CreateFMul(x, fconst(em, t, 1.0 / 6)), fconst(em, t, 0.5))));
  case Op::Softplus: { // log(1+exp(x)) = max(x,0) + log1p(exp(-|x|)), no overflow
    Value *ax = em.unaryIntrinsic(Intrinsic::fabs, x);
    Value *pos = select(b.CreateFCmpOGT(x, zero), x, zero);
    return b.CreateFAdd(pos, em.libm("log1pf", {em.exp(b.CreateFNeg(ax))}));
  }
  case Op::Softsign: return b.CreateFDiv(x, b.CreateFAdd(one, em.unaryIntrinsic(Intrinsic::fabs, x)));
  case Op::Shrink: {
    Value *bias = fconst(em, t, p[0]), *lambd = fconst(em, t, p[1]);
    return select(b.CreateFCmpOLT(x, b.CreateFNeg(lambd)), b.CreateFAdd(x, bias),
                  select(b.CreateFCmpOGT(x, lambd), b.CreateFSub(x, bias), zero));
  }
  case Op::IsNaN: return b.CreateFCmpUNO(x, x);
  case Op::IsInf: {
    Value *inf = fconst(em, t, std::numeric_limits<double>::infinity());
    Value *pos = p[0] != 0 ? b.CreateFCmpOEQ(x, inf) : b.getFalse();
    Value *neg = p[1] != 0 ? b.CreateFCmpOEQ(x, b.CreateFNeg(inf)) : b.getFalse();
    return b.CreateOr(pos, neg);
  }
  case Op::Mean: {
    Value *acc = x;
    for (size_t j = 1; j < in.size(); ++j)
      acc = b.CreateFAdd(acc, in[j]);
    return b.CreateFDiv(acc, fconst(em, t, double(in.size())));
  }
  default: return nullptr;
  }
}

} // namespace

Value *convert(Emitter &em, Value *v, DType from, DType to) {
  IRBuilder<> &b = em.b();
  if (from == to)
    return v;
  // bfloat16 values are computed as float32; a cast to it rounds to its precision.
  if (from == DType::BF16)
    return convert(em, v, DType::F32, to);
  if (to == DType::BF16)
    return bf16BitsToFloat(b, floatToBf16Bits(b, convert(em, v, from, DType::F32)));
  const bool fromF = isFloatingPoint(from), toF = isFloatingPoint(to);
  if (to == DType::Bool)
    return fromF ? b.CreateFCmpUNE(v, ConstantFP::get(v->getType(), 0.0))
                 : b.CreateICmpNE(v, ConstantInt::get(v->getType(), 0));
  if (fromF && toF) {
    if (to == DType::F16)
      return b.CreateFPTrunc(v, b.getHalfTy());
    return b.CreateFPCast(v, computeType(em, to)); // float16 is already float
  }
  const bool fromSigned = isSignedDType(from); // bool and uint8 are unsigned
  if (toF) {
    // Integers reach float16 through float: exact up to 2^24, beyond which
    // float16 is infinite anyway, so this rounds once.
    Type *dst = to == DType::F16 ? b.getFloatTy() : computeType(em, to);
    Value *f = fromSigned ? b.CreateSIToFP(v, dst) : b.CreateUIToFP(v, dst);
    return to == DType::F16 ? b.CreateFPTrunc(f, b.getHalfTy()) : f;
  }
  Type *dst = computeType(em, to);
  if (fromF) {
    // Saturating (NaN → 0) so out-of-range values are defined; 8/16-bit
    // targets wrap from int32 like C and numpy casts on x86.
    if (!isSignedDType(to) && bits(to) >= 32) {
      // Unsigned 32/64-bit: non-negative values convert unsigned (up to
      // 2^64), negative ones through int64 and wrap (-1 → all ones).
      Type *i64 = b.getInt64Ty();
      Value *s = b.CreateIntrinsic(Intrinsic::fptosi_sat, {i64, v->getType()}, {v});
      Value *u = b.CreateIntrinsic(Intrinsic::fptoui_sat, {i64, v->getType()}, {v});
      Value *neg = b.CreateFCmpOLT(v, ConstantFP::get(v->getType(), 0.0));
      return b.CreateTrunc(b.CreateSelect(neg, s, u), dst);
    }
    Type *wide = bits(to) >= 32 ? dst : b.getInt32Ty();
    Value *i = b.CreateIntrinsic(Intrinsic::fptosi_sat, {wide, v->getType()}, {v});
    return b.CreateTrunc(i, dst);
  }
  return b.CreateIntCast(v, dst, fromSigned);
}

Value *applyOp(Emitter &em, const ElementwiseSpec &s, const ElementTypes &types, const std::vector<Value *> &in) {
  IRBuilder<> &b = em.b();
  const DType t = s.dtype;
  const bool fp = isFloatingPoint(t);
  Value *x = in[0];
  if (fp)
    if (Value *v = floatOp(em, s, in))
      return v;
  Value *zero = fp ? fconst(em, t, 0) : intConst(em, t, 0);
  auto fold = [&](auto f) {
    Value *acc = x;
    for (size_t j = 1; j < in.size(); ++j)
      acc = f(acc, in[j]);
    return acc;
  };
  switch (s.op) {
  case Op::Copy: return x;
  case Op::Cast: return convert(em, x, t, types.out);
  case Op::Where: return b.CreateSelect(x, in[1], in[2]);
  case Op::Sum: return fold([&](Value *a, Value *c) { return fp ? b.CreateFAdd(a, c) : b.CreateAdd(a, c); });
  case Op::Max: case Op::Min:
    return fold([&](Value *a, Value *c) { return umaxOrSmax(em, t, a, c, s.op == Op::Max); });
  case Op::Add: return fp ? b.CreateFAdd(x, in[1]) : b.CreateAdd(x, in[1]);
  case Op::Sub: return fp ? b.CreateFSub(x, in[1]) : b.CreateSub(x, in[1]);
  case Op::Mul: return fp ? b.CreateFMul(x, in[1]) : b.CreateMul(x, in[1]);
  case Op::Div: return fp ? b.CreateFDiv(x, in[1]) : intDivRem(em, t, x, in[1], false);
  case Op::Mod: return mod(em, t, x, in[1], s.params[0] != 0);
  case Op::Neg: return fp ? b.CreateFNeg(x) : b.CreateSub(zero, x);
  case Op::Abs:
    if (fp) return em.unaryIntrinsic(Intrinsic::fabs, x);
    return isSignedDType(t) ? b.CreateBinaryIntrinsic(Intrinsic::abs, x, b.getFalse()) : x;
  case Op::Relu: // x < 0 ? 0 : x keeps NaN, like PyTorch and ONNX Runtime
    return b.CreateSelect(less(em, t, x, zero), zero, x);
  case Op::Sign: {
    Value *one = fp ? fconst(em, t, 1) : intConst(em, t, 1);
    if (!fp && !isSignedDType(t))
      return b.CreateSelect(b.CreateICmpNE(x, zero), one, zero);
    Value *minusOne = fp ? fconst(em, t, -1) : intConst(em, t, -1);
    return b.CreateSelect(less(em, t, zero, x), one, b.CreateSelect(less(em, t, x, zero), minusOne, x));
  }
  case Op::Clip: return clipConst(em, t, clipConst(em, t, x, s.params[0], true), s.params[1], false);
  case Op::ClipLow: return b.CreateSelect(less(em, t, x, in[1]), in[1], x);
  case Op::ClipHigh: return b.CreateSelect(less(em, t, in[1], x), in[1], x);
  case Op::PRelu:
    return b.CreateSelect(less(em, t, x, zero), fp ? b.CreateFMul(x, in[1]) : b.CreateMul(x, in[1]), x);
  case Op::Not: return b.CreateNot(x);
  case Op::And: return b.CreateAnd(x, in[1]);
  case Op::Or: return b.CreateOr(x, in[1]);
  case Op::Xor: return b.CreateXor(x, in[1]);
  case Op::RandomBits: return randomBits(em, x, in[1], s.params[0]);
  case Op::ShiftLeft: case Op::ShiftRight: return shift(em, t, x, in[1], s.op == Op::ShiftLeft);
  case Op::Equal: return fp ? b.CreateFCmpOEQ(x, in[1]) : b.CreateICmpEQ(x, in[1]);
  case Op::Less: return less(em, t, x, in[1]);
  case Op::Greater: return less(em, t, in[1], x);
  case Op::LessOrEqual: // !(y < x) is wrong for NaN: compare explicitly
    return fp ? b.CreateFCmpOLE(x, in[1]) : b.CreateNot(less(em, t, in[1], x));
  case Op::GreaterOrEqual: return fp ? b.CreateFCmpOGE(x, in[1]) : b.CreateNot(less(em, t, x, in[1]));
  case Op::Pow: {
    const DType et = types.in[1];
    if (fp)
      return em.binaryIntrinsic(Intrinsic::pow, x, convert(em, in[1], et, computeDType(t)));
    if (!isFloatingPoint(et)) // integer ** integer: exact
      return intPow(em, t, x, convert(em, in[1], et, t));
    // Integer base, float exponent: in double, truncated back like numpy's astype.
    Value *r = em.binaryIntrinsic(Intrinsic::pow, convert(em, x, t, DType::F64), convert(em, in[1], et, DType::F64));
    return convert(em, r, DType::F64, t);
  }
  // Float-only ops (floatOp above; describe() refused other dtypes), and the
  // ONNX ops that lower onto other kernels (describe() refused them).
  case Op::Sqrt: case Op::Reciprocal: case Op::Softsign: case Op::Floor: case Op::Ceil: case Op::Round:
  case Op::HardSwish: case Op::LeakyRelu: case Op::ThresholdedRelu: case Op::HardSigmoid: case Op::Shrink:
  case Op::Elu: case Op::Selu: case Op::Celu: case Op::Sigmoid: case Op::Tanh: case Op::Exp: case Op::Log:
  case Op::Erf: case Op::Sin: case Op::Cos: case Op::Tan: case Op::Asin: case Op::Acos: case Op::Atan:
  case Op::Sinh: case Op::Cosh: case Op::Asinh: case Op::Acosh: case Op::Atanh: case Op::Softplus: case Op::Mean:
  case Op::IsNaN: case Op::IsInf: case Op::BitShift: case Op::CastLike:
    break;
  }
  POPC_ASSERT(false && "op validated by describe()");
  return nullptr;
}

} // namespace popc::codegen::detail
