// Elementwise kernels: out[i] = op(in0[i], ...), scalar inputs broadcast.
// The op table and type rules live here; the math in elementwise_math.cpp.
#include "compiler/codegen/elementwise_math.h"
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/codegen/kinds.h"
#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

enum class Class { Cheap, Slow, Transcendental }; // cycle cost per element: 1, 4, 10

// dtype classes an op accepts for `dtype`.
enum : unsigned { kF = 1, kS = 2, kU = 4, kB = 8, kNum = kF | kS | kU, kInt = kS | kU, kAll = 15 };

// How the input and output dtypes relate to `dtype`.
enum class Sig {
  Same,   // every input and the output are dtype
  ToBool, // inputs dtype, output bool
  Where,  // in0 bool, in1/in2/out dtype
  Pow,    // in0/out dtype, in1 any numeric
  Cast,   // in0 dtype, out any
};

struct OpInfo {
  unsigned arity;  // 0: any number of inputs (at least one)
  unsigned params; // required size of spec.params
  Class cost;
  unsigned types; // classes allowed for dtype
  Sig sig = Sig::Same;
};

const std::map<std::string, OpInfo> &ops() {
  using C = Class;
  static const std::map<std::string, OpInfo> table = [] {
    std::map<std::string, OpInfo> t = {
        {"Copy", {1, 0, C::Cheap, kAll}},      {"Relu", {1, 0, C::Cheap, kNum}},
        {"Neg", {1, 0, C::Cheap, kNum}},       {"Abs", {1, 0, C::Cheap, kNum}},
        {"Sign", {1, 0, C::Cheap, kNum}},      {"Clip", {1, 2, C::Cheap, kNum}},
        {"Not", {1, 0, C::Cheap, kB | kInt}},  {"Sqrt", {1, 0, C::Slow, kF}},
        {"Reciprocal", {1, 0, C::Slow, kF}},   {"Floor", {1, 0, C::Cheap, kF}},
        {"Ceil", {1, 0, C::Cheap, kF}},        {"Round", {1, 0, C::Cheap, kF}},
        {"LeakyRelu", {1, 1, C::Cheap, kF}},   {"ThresholdedRelu", {1, 1, C::Cheap, kF}},
        {"HardSigmoid", {1, 2, C::Cheap, kF}}, {"HardSwish", {1, 0, C::Cheap, kF}},
        {"Softsign", {1, 0, C::Slow, kF}},     {"Shrink", {1, 2, C::Cheap, kF}},
        {"Elu", {1, 1, C::Transcendental, kF}}, {"Selu", {1, 2, C::Transcendental, kF}},
        {"Celu", {1, 1, C::Transcendental, kF}},
        {"Add", {2, 0, C::Cheap, kNum}},       {"Sub", {2, 0, C::Cheap, kNum}},
        {"Mul", {2, 0, C::Cheap, kNum}},       {"Div", {2, 0, C::Slow, kNum}},
        {"Mod", {2, 1, C::Slow, kNum}},        {"PRelu", {2, 0, C::Cheap, kF | kS}},
        {"ClipLow", {2, 0, C::Cheap, kNum}},   {"ClipHigh", {2, 0, C::Cheap, kNum}},
        {"And", {2, 0, C::Cheap, kB | kInt}},  {"Or", {2, 0, C::Cheap, kB | kInt}},
        {"Xor", {2, 0, C::Cheap, kB | kInt}},  {"ShiftLeft", {2, 0, C::Cheap, kInt}},
        {"ShiftRight", {2, 0, C::Cheap, kInt}},
        {"Sum", {0, 0, C::Cheap, kNum}},       {"Mean", {0, 0, C::Cheap, kF}},
        {"Max", {0, 0, C::Cheap, kNum}},       {"Min", {0, 0, C::Cheap, kNum}},
        {"Equal", {2, 0, C::Cheap, kAll, Sig::ToBool}},
        {"IsNaN", {1, 0, C::Cheap, kF, Sig::ToBool}},
        {"IsInf", {1, 2, C::Cheap, kF, Sig::ToBool}},
        {"Where", {3, 0, C::Cheap, kAll, Sig::Where}},
        {"Pow", {2, 0, C::Transcendental, kNum, Sig::Pow}},
        {"Cast", {1, 0, C::Cheap, kAll, Sig::Cast}},
    };
    for (const char *op : {"Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
      t[op] = {2, 0, C::Cheap, kNum, Sig::ToBool};
    for (const char *op : {"Sigmoid", "Tanh", "Exp", "Log", "Erf", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan",
                           "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Softplus"})
      t[op] = {1, 0, C::Transcendental, kF};
    return t;
  }();
  return table;
}

unsigned dtypeClass(DType t) {
  if (isFloatingPoint(t)) return kF;
  if (isSignedDType(t)) return kS;
  return t == DType::Bool ? kB : kU;
}

// The dtypes of every input and of the output; throws for a bad combination.
ElementTypes elementTypes(const ElementwiseSpec &s, const OpInfo &info, size_t arity) {
  ElementTypes types;
  types.in.assign(arity, s.dtype);
  if (info.sig == Sig::Where)
    types.in[0] = DType::Bool;
  types.out = info.sig == Sig::ToBool ? DType::Bool : s.dtype;
  if (!s.inputDTypes.empty()) {
    if (s.inputDTypes.size() != arity)
      fail("codegen: elementwise {} has {} input(s) but inputDTypes has {} entries: give one per input", s.op,
           arity, s.inputDTypes.size());
    for (size_t j = 0; j < arity; ++j) {
      const DType want = types.in[j];
      const DType got = s.inputDTypes[j];
      const bool free = info.sig == Sig::Pow && j == 1 && (dtypeClass(got) & kNum);
      if (got != want && !free)
        fail("codegen: elementwise {} of {}: input {} must be {}, not {}", s.op, dtypeName(s.dtype), j,
             dtypeName(want), dtypeName(got));
      types.in[j] = got;
    }
  }
  if (s.outDType) {
    if (info.sig != Sig::Cast && *s.outDType != types.out)
      fail("codegen: elementwise {} of {} produces {}, not {}", s.op, dtypeName(s.dtype), dtypeName(types.out),
           dtypeName(*s.outDType));
    types.out = *s.outDType;
  } else if (info.sig == Sig::Cast) {
    fail("codegen: elementwise Cast needs outDType (the target type)");
  }
  return types;
}

std::string scalarMask(const ElementwiseSpec &s) {
  std::string mask;
  for (bool b : s.scalarInput)
    mask += b ? '1' : '0';
  return mask;
}

// Copy and Where's data inputs move bits: no widening of float16, no bool normalisation.
bool rawInput(const ElementwiseSpec &s, size_t j) { return s.op == "Copy" || (s.op == "Where" && j > 0); }
bool rawOutput(const ElementwiseSpec &s) { return s.op == "Copy" || s.op == "Where"; }

std::string typesSuffix(const ElementwiseSpec &s) {
  std::string r;
  if (!s.inputDTypes.empty()) {
    std::vector<std::string_view> names;
    for (DType t : s.inputDTypes)
      names.push_back(dtypeName(t));
    r += fmt::format("_in_{}", fmt::join(names, "_"));
  }
  if (s.outDType)
    r += fmt::format("_to_{}", dtypeName(*s.outDType));
  return r;
}

} // namespace

KernelDesc describe(const ElementwiseSpec &s) {
  auto it = ops().find(s.op);
  if (it == ops().end()) {
    std::vector<std::string> names;
    for (const auto &[name, info] : ops())
      names.push_back(name);
    fail("codegen: unknown elementwise op '{}': use one of {}", s.op, fmt::join(names, " "));
  }
  const OpInfo &info = it->second;
  if (!(dtypeClass(s.dtype) & info.types))
    unsupported(s.op, s.dtype);
  if (info.arity == 0 ? s.scalarInput.empty() : s.scalarInput.size() != info.arity)
    fail("codegen: elementwise {} takes {} input(s) but scalarInput has {} entries: give one per input",
         s.op, info.arity == 0 ? "one or more" : std::to_string(info.arity), s.scalarInput.size());
  if (s.params.size() != info.params)
    fail("codegen: elementwise {} needs {} param(s), got {}", s.op, info.params, s.params.size());
  const ElementTypes types = elementTypes(s, info, s.scalarInput.size());

  KernelDesc d;
  d.kind = "elementwise";
  std::string name = fmt::format("{}_{}{}_n{}", s.op, dtypeName(s.dtype), typesSuffix(s), s.elements);
  if (scalarMask(s).find('1') != std::string::npos)
    name += "_s" + scalarMask(s);
  for (double p : s.params)
    name += fmt::format("_{}", p);
  d.name = name;
  for (unsigned i = 0; i < s.scalarInput.size(); ++i)
    d.fields.push_back({"in" + std::to_string(i),
                        fieldBytes("in", {s.scalarInput[i] ? 1u : s.elements}, types.in[i]), FieldAccess::Input});
  d.fields.push_back({"out", fieldBytes("out", {s.elements}, types.out), FieldAccess::Output});

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
  d.cycles = s.op == "Copy" ? cycles::copy(n * dtypeSize(s.dtype)) : cycles::kVertexOverhead + n * perElem;
  return d;
}

void emit(Emitter &em, const ElementwiseSpec &s) {
  const size_t arity = s.scalarInput.size();
  const ElementTypes types = elementTypes(s, ops().at(s.op), arity);
  auto load = [&](size_t j, Value *i) {
    return rawInput(s, j) ? em.load(types.in[j], em.field(j), i) : loadValue(em, types.in[j], em.field(j), i);
  };
  std::vector<Value *> scalars(arity, nullptr);
  for (size_t j = 0; j < arity; ++j)
    if (s.scalarInput[j])
      scalars[j] = load(j, em.i64(0)); // loaded once, outside the loop
  Value *out = em.field(arity);
  em.forLoop(s.elements, [&](Value *i) {
    std::vector<Value *> in(arity);
    for (size_t j = 0; j < arity; ++j)
      in[j] = scalars[j] ? scalars[j] : load(j, i);
    Value *v = applyOp(em, s, types, in);
    if (rawOutput(s))
      em.store(types.out, v, out, i);
    else
      storeValue(em, types.out, v, out, i);
  });
}

std::string key(const ElementwiseSpec &s) {
  return fmt::format("elementwise:op={},dtype={}{},elements={},scalar={},params=[{}]", s.op, dtypeName(s.dtype),
                     typesSuffix(s), s.elements, scalarMask(s), fmt::join(s.params, ","));
}

} // namespace popc::codegen::detail
