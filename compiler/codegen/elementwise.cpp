// Elementwise kernels: out[i] = op(in0[i], ...), scalar inputs broadcast.
// Validation, names, fields and cycles from the op's line in
// compiler/ops/elementwise.def; the math in elementwise_math.cpp.
#include "compiler/codegen/elementwise_math.h"
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/codegen/kinds.h"
#include "support/error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

using ops::Elementwise;
using ops::Signature;
using Op = Elementwise;

// The dtypes of every input and of the output; throws for a bad combination.
ElementTypes elementTypes(const ElementwiseSpec &s, const ops::ElementwiseInfo &info, size_t arity) {
  ElementTypes types;
  types.in.assign(arity, s.dtype);
  if (info.signature == Signature::Where)
    types.in[0] = DType::Bool;
  types.out = info.signature == Signature::ToBool ? DType::Bool : s.dtype;
  if (!s.inputDTypes.empty()) {
    if (s.inputDTypes.size() != arity)
      fail("codegen: elementwise {} has {} input(s) but inputDTypes has {} entries: give one per input", ops::name(s.op),
           arity, s.inputDTypes.size());
    for (size_t j = 0; j < arity; ++j) {
      const DType want = types.in[j];
      const DType got = s.inputDTypes[j];
      const bool free = info.signature == Signature::Pow && j == 1 && (ops::typeClass(got) & ops::kNum);
      if (got != want && !free)
        fail("codegen: elementwise {} of {}: input {} must be {}, not {}", ops::name(s.op), dtypeName(s.dtype), j,
             dtypeName(want), dtypeName(got));
      types.in[j] = got;
    }
  }
  if (s.outDType) {
    if (info.signature != Signature::Cast && *s.outDType != types.out)
      fail("codegen: elementwise {} of {} produces {}, not {}", ops::name(s.op), dtypeName(s.dtype), dtypeName(types.out),
           dtypeName(*s.outDType));
    types.out = *s.outDType;
  } else if (info.signature == Signature::Cast) {
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
bool rawInput(const ElementwiseSpec &s, size_t j) { return s.op == Op::Copy || (s.op == Op::Where && j > 0); }
bool rawOutput(const ElementwiseSpec &s) { return s.op == Op::Copy || s.op == Op::Where; }

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

// Element counts at least this large are an immediate field, not part of the
// code: a layer's vertices split its elements into chunks of many sizes
// (GoogLeNet: 57 Sum types, one function per arity). Smaller counts stay
// constants, straight-line code.
constexpr uint32_t kImmediateElements = 16;

bool elementsImmediate(const ElementwiseSpec &s) { return s.elements >= kImmediateElements; }

} // namespace

KernelDesc describe(const ElementwiseSpec &s) {
  const ops::ElementwiseInfo &info = ops::info(s.op);
  if (info.arity == ops::kNoKernel)
    fail("codegen: {} has no elementwise kernel of its own (compiler/lib lowers it onto others)", info.name);
  if (!(ops::typeClass(s.dtype) & info.types))
    unsupported(std::string(info.name), s.dtype);
  if (info.arity == ops::kVariadic ? s.scalarInput.empty() : s.scalarInput.size() != info.arity)
    fail("codegen: elementwise {} takes {} input(s) but scalarInput has {} entries: give one per input",
         info.name, info.arity == ops::kVariadic ? "one or more" : std::to_string(info.arity), s.scalarInput.size());
  if (s.params.size() != info.params.size())
    fail("codegen: elementwise {} needs {} param(s), got {}", info.name, info.params.size(), s.params.size());
  const ElementTypes types = elementTypes(s, info, s.scalarInput.size());

  KernelDesc d;
  d.kind = "elementwise";
  std::string name = fmt::format("{}_{}{}_n{}", info.name, dtypeName(s.dtype), typesSuffix(s), s.elements);
  if (scalarMask(s).find('1') != std::string::npos)
    name += "_s" + scalarMask(s);
  for (double p : s.params)
    name += fmt::format("_{}", p);
  d.name = name;
  for (unsigned i = 0; i < s.scalarInput.size(); ++i)
    d.fields.push_back({"in" + std::to_string(i),
                        fieldBytes("in", {s.scalarInput[i] ? 1u : s.elements}, types.in[i]), FieldAccess::Input});
  d.fields.push_back({"out", fieldBytes("out", {s.elements}, types.out), FieldAccess::Output});
  if (elementsImmediate(s)) {
    d.fields.push_back({"elements", 0, FieldAccess::Immediate, s.elements});
    ElementwiseSpec code = s;
    code.elements = 0;
    d.codeKey = key(code) + ",elements=immediate";
  }

  // 1 cycle per element for simple ops (the IPU does 2 f32 per cycle on 64-bit
  // vectors but spends about as much on loads/stores), 4 for divide/sqrt,
  // ~10 for transcendental functions; 64-bit types have no vector unit: x2.
  // Copy moves 8 bytes per cycle.
  uint64_t n = s.elements;
  uint64_t perElem = info.cost == ops::Cost::Cheap ? 1 : info.cost == ops::Cost::Slow ? 4 : 10;
  if (info.arity == ops::kVariadic)
    perElem *= s.scalarInput.size();
  if (dtypeSize(s.dtype) == 8)
    perElem *= 2;
  d.cycles = s.op == Op::Copy ? cycles::copy(n * dtypeSize(s.dtype)) : cycles::kVertexOverhead + n * perElem;
  return d;
}

void emit(Emitter &em, const ElementwiseSpec &s) {
  const size_t arity = s.scalarInput.size();
  const ElementTypes types = elementTypes(s, ops::info(s.op), arity);
  auto load = [&](size_t j, Value *i) {
    return rawInput(s, j) ? em.load(types.in[j], em.field(j), i) : loadValue(em, types.in[j], em.field(j), i);
  };
  std::vector<Value *> scalars(arity, nullptr);
  for (size_t j = 0; j < arity; ++j)
    if (s.scalarInput[j])
      scalars[j] = load(j, em.i64(0)); // loaded once, outside the loop
  Value *out = em.field(arity);
  Value *elements = elementsImmediate(s) ? em.immediate(arity + 1) : em.i64(s.elements);
  em.forLoop(em.i64(0), elements, [&](Value *i) {
    std::vector<Value *> in(arity);
    for (size_t j = 0; j < arity; ++j)
      in[j] = scalars[j] ? scalars[j] : load(j, i);
    Value *v = applyOp(em, s, types, in);
    if (rawOutput(s))
      em.store(types.out, v, out, i);
    else
      storeValue(em, types.out, v, out, i);
  });
  // Vertices hold tens to hundreds of elements: one masked vector loop
  // instead of a vector loop, a vector epilogue and a scalar remainder, each
  // with every input's loads (GoogLeNet's JIT CPU -7 %, the same run time).
  em.foldLastLoopTail();
}

std::string key(const ElementwiseSpec &s) {
  return fmt::format("elementwise:op={},dtype={}{},elements={},scalar={},params=[{}]", ops::name(s.op), dtypeName(s.dtype),
                     typesSuffix(s), s.elements, scalarMask(s), fmt::join(s.params, ","));
}

} // namespace popc::codegen::detail
