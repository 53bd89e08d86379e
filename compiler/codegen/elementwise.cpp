// Elementwise kernels: out[i] = op(in0[i], ...), scalar inputs broadcast.
#include "compiler/codegen/kinds.h"
#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <limits>
#include <map>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

enum class Class { Cheap, Slow, Transcendental }; // cycle cost per element: 1, 4, 10

struct OpInfo {
  unsigned arity; // 0: any number of inputs (at least one)
  unsigned params; // required size of spec.params
  Class cost;
  bool integer; // also defined for int32/int64
};

const std::map<std::string, OpInfo> &ops() {
  static const std::map<std::string, OpInfo> table = {
      {"Relu", {1, 0, Class::Cheap, true}},       {"Sigmoid", {1, 0, Class::Transcendental, false}},
      {"Tanh", {1, 0, Class::Transcendental, false}}, {"Exp", {1, 0, Class::Transcendental, false}},
      {"Log", {1, 0, Class::Transcendental, false}},  {"Neg", {1, 0, Class::Cheap, true}},
      {"Abs", {1, 0, Class::Cheap, true}},        {"Sqrt", {1, 0, Class::Slow, false}},
      {"Reciprocal", {1, 0, Class::Slow, false}}, {"Copy", {1, 0, Class::Cheap, true}},
      {"LeakyRelu", {1, 1, Class::Cheap, false}}, {"Clip", {1, 2, Class::Cheap, true}},
      {"Floor", {1, 0, Class::Cheap, false}},     {"Ceil", {1, 0, Class::Cheap, false}},
      {"Erf", {1, 0, Class::Transcendental, false}},  {"Sin", {1, 0, Class::Transcendental, false}},
      {"Cos", {1, 0, Class::Transcendental, false}},  {"Add", {2, 0, Class::Cheap, true}},
      {"Sub", {2, 0, Class::Cheap, true}},        {"Mul", {2, 0, Class::Cheap, true}},
      {"Div", {2, 0, Class::Slow, true}},         {"Pow", {2, 0, Class::Transcendental, false}},
      {"Max", {2, 0, Class::Cheap, true}},        {"Min", {2, 0, Class::Cheap, true}},
      {"Sum", {0, 0, Class::Cheap, true}}, // sums every input (partial-sum reductions)
  };
  return table;
}

bool isInt(DType t) { return t == DType::I32 || t == DType::I64; }

// Integer division that never traps: x/0 = 0 and x/-1 = -x (wrapping), like the
// IPU, which has no divide trap, instead of undefined behaviour on the host.
Value *safeSDiv(Emitter &em, Value *a, Value *d) {
  IRBuilder<> &b = em.b();
  Constant *zero = ConstantInt::get(d->getType(), 0);
  Constant *one = ConstantInt::get(d->getType(), 1);
  Value *isZero = b.CreateICmpEQ(d, zero);
  Value *isMinusOne = b.CreateICmpEQ(d, ConstantInt::getSigned(d->getType(), -1));
  Value *safe = b.CreateSelect(b.CreateOr(isZero, isMinusOne), one, d);
  Value *q = b.CreateSDiv(a, safe);
  return b.CreateSelect(isZero, zero, b.CreateSelect(isMinusOne, b.CreateSub(zero, a), q));
}

Value *apply(Emitter &em, const ElementwiseSpec &s, const std::vector<Value *> &in) {
  IRBuilder<> &b = em.b();
  const std::string &op = s.op;
  DType t = s.dtype;
  bool fp = em.isFloat(t);
  Value *x = in[0];
  Value *zero = em.constant(t, 0);
  Value *one = em.constant(t, 1);
  if (op == "Copy")
    return x;
  if (op == "Sum") {
    Value *acc = x;
    for (size_t j = 1; j < in.size(); ++j)
      acc = em.add(t, acc, in[j]);
    return acc;
  }
  if (op == "Add")
    return em.add(t, x, in[1]);
  if (op == "Sub")
    return em.sub(t, x, in[1]);
  if (op == "Mul")
    return em.mul(t, x, in[1]);
  if (op == "Div")
    return fp ? b.CreateFDiv(x, in[1]) : safeSDiv(em, x, in[1]);
  if (op == "Max")
    return em.max(t, x, in[1]);
  if (op == "Min")
    return em.min(t, x, in[1]);
  if (op == "Neg")
    return fp ? b.CreateFNeg(x) : b.CreateSub(zero, x);
  if (op == "Abs")
    return fp ? em.unaryIntrinsic(Intrinsic::fabs, x)
              : b.CreateBinaryIntrinsic(Intrinsic::abs, x, b.getFalse());
  if (op == "Relu") // x < 0 ? 0 : x keeps NaN, like PyTorch and ONNX Runtime
    return fp ? b.CreateSelect(b.CreateFCmpOLT(x, zero), zero, x) : em.max(t, x, zero);
  if (op == "Clip") {
    Value *r = x;
    auto bound = [&](double v, bool lower) {
      if (!fp) {
        double lo = t == DType::I32 ? -2147483648.0 : -9223372036854775808.0;
        double hi = -lo;
        if (std::isnan(v) || v < lo || v >= hi)
          return; // no such bound within the type's range
      }
      Value *c = em.constant(t, fp ? v : std::trunc(v));
      Value *out = fp ? (lower ? b.CreateFCmpOLT(r, c) : b.CreateFCmpOGT(r, c))
                      : (lower ? b.CreateICmpSLT(r, c) : b.CreateICmpSGT(r, c));
      r = b.CreateSelect(out, c, r);
    };
    bound(s.params[0], true);
    bound(s.params[1], false);
    return r;
  }
  if (op == "LeakyRelu")
    return b.CreateSelect(b.CreateFCmpOLT(x, zero), b.CreateFMul(x, em.fconst(t, s.params[0])), x);
  if (op == "Sigmoid")
    return b.CreateFDiv(one, b.CreateFAdd(one, em.exp(b.CreateFNeg(x))));
  if (op == "Tanh")
    return em.libm("tanhf", {x});
  if (op == "Erf")
    return em.libm("erff", {x});
  if (op == "Exp")
    return em.exp(x);
  if (op == "Log")
    return em.log(x);
  if (op == "Sqrt")
    return em.unaryIntrinsic(Intrinsic::sqrt, x);
  if (op == "Reciprocal")
    return b.CreateFDiv(one, x);
  if (op == "Floor")
    return em.unaryIntrinsic(Intrinsic::floor, x);
  if (op == "Ceil")
    return em.unaryIntrinsic(Intrinsic::ceil, x);
  if (op == "Sin")
    return em.unaryIntrinsic(Intrinsic::sin, x);
  if (op == "Cos")
    return em.unaryIntrinsic(Intrinsic::cos, x);
  if (op == "Pow")
    return em.binaryIntrinsic(Intrinsic::pow, x, in[1]);
  POPC_ASSERT(false && "op validated by describe()");
}

std::string scalarMask(const ElementwiseSpec &s) {
  std::string mask;
  for (bool b : s.scalarInput)
    mask += b ? '1' : '0';
  return mask;
}

} // namespace

KernelDesc describe(const ElementwiseSpec &s) {
  auto it = ops().find(s.op);
  if (it == ops().end())
    fail("codegen: unknown elementwise op '{}': use one of Relu Sigmoid Tanh Exp Log Neg Abs Sqrt "
         "Reciprocal Copy LeakyRelu Clip Floor Ceil Erf Sin Cos Add Sub Mul Div Pow Max Min Sum",
         s.op);
  const OpInfo &info = it->second;
  bool dtypeOk = s.dtype == DType::F32 || s.dtype == DType::F64 || (info.integer && isInt(s.dtype)) ||
                 s.op == "Copy"; // Copy moves bits of any type
  if (!dtypeOk)
    unsupported(s.op, s.dtype);
  if (info.arity == 0 ? s.scalarInput.empty() : s.scalarInput.size() != info.arity)
    fail("codegen: elementwise {} takes {} input(s) but scalarInput has {} entries: give one per input",
         s.op, info.arity, s.scalarInput.size());
  if (s.params.size() != info.params)
    fail("codegen: elementwise {} needs {} param(s), got {}", s.op, info.params, s.params.size());

  KernelDesc d;
  d.kind = "elementwise";
  std::string name = fmt::format("{}_{}_n{}", s.op, dtypeName(s.dtype), s.elements);
  if (scalarMask(s).find('1') != std::string::npos)
    name += "_s" + scalarMask(s);
  for (double p : s.params)
    name += fmt::format("_{}", p);
  d.name = name;
  for (unsigned i = 0; i < s.scalarInput.size(); ++i)
    d.fields.push_back({"in" + std::to_string(i),
                        fieldBytes("in", {s.scalarInput[i] ? 1u : s.elements}, s.dtype), FieldAccess::Input});
  d.fields.push_back({"out", fieldBytes("out", {s.elements}, s.dtype), FieldAccess::Output});

  // 1 cycle per element for simple ops (the IPU does 2 f32 per cycle on 64-bit
  // vectors but spends about as much on loads/stores), 4 for divide/sqrt,
  // ~10 for transcendental functions; 64-bit types have no vector unit: x2.
  // Copy moves 8 bytes per cycle.
  uint64_t n = s.elements;
  uint64_t perElem = info.cost == Class::Cheap ? 1 : info.cost == Class::Slow ? 4 : 10;
  if (info.arity == 0)
    perElem *= s.scalarInput.size();
  if (dtypeSize(s.dtype) == 8)
    perElem *= 2;
  d.cycles = s.op == "Copy" ? 10 + (n * dtypeSize(s.dtype) + 7) / 8 : 10 + n * perElem;
  return d;
}

void emit(Emitter &em, const ElementwiseSpec &s) {
  size_t arity = s.scalarInput.size();
  DType t = s.dtype; // Copy of a non-arithmetic dtype moves it as same-size iN bits
  std::vector<Value *> scalars(arity, nullptr);
  for (size_t j = 0; j < arity; ++j)
    if (s.scalarInput[j])
      scalars[j] = em.load(t, em.field(j), em.i64(0)); // loaded once, outside the loop
  Value *out = em.field(arity);
  em.forLoop(s.elements, [&](Value *i) {
    std::vector<Value *> in(arity);
    for (size_t j = 0; j < arity; ++j)
      in[j] = scalars[j] ? scalars[j] : em.load(t, em.field(j), i);
    em.store(t, apply(em, s, in), out, i);
  });
}

std::string key(const ElementwiseSpec &s) {
  return fmt::format("elementwise:op={},dtype={},elements={},scalar={},params=[{}]", s.op, dtypeName(s.dtype),
                     s.elements, scalarMask(s), fmt::join(s.params, ","));
}

} // namespace popc::codegen::detail
