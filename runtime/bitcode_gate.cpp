#include "runtime/bitcode_gate.h"

#include "support/error.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <set>

namespace popc::runtime {

namespace {

// Intrinsics that only compute on their operands or on memory the vertex
// already points at. Anything else (traps, stack save, frame address, ...)
// is refused.
bool allowedIntrinsic(llvm::Intrinsic::ID id) {
  namespace I = llvm::Intrinsic;
  static const std::set<llvm::Intrinsic::ID> kAllowed = {
      // floating-point math
      I::exp, I::exp2, I::exp10, I::log, I::log2, I::log10, I::sqrt, I::fabs, I::maxnum, I::minnum, I::maximum, I::minimum, I::floor,
      I::ceil, I::trunc, I::round, I::roundeven, I::rint, I::nearbyint, I::pow, I::sin, I::cos,
      I::tan, I::asin, I::acos, I::atan, I::sinh, I::cosh, I::tanh, I::fma, I::fmuladd, I::copysign,
      I::canonicalize, I::is_fpclass, I::fptosi_sat, I::fptoui_sat, I::convert_from_fp16, I::convert_to_fp16,
      // integer math
      I::abs, I::smax, I::smin, I::umax, I::umin, I::ctpop, I::ctlz, I::cttz, I::bswap, I::bitreverse, I::fshl, I::fshr,
      I::sadd_sat, I::ssub_sat, I::uadd_sat, I::usub_sat, I::sadd_with_overflow, I::uadd_with_overflow,
      I::ssub_with_overflow, I::usub_with_overflow, I::smul_with_overflow, I::umul_with_overflow,
      // memory on the vertex's own buffers
      I::memcpy, I::memcpy_inline, I::memset, I::memset_inline, I::memmove, I::lifetime_start, I::lifetime_end,
      I::masked_load, I::masked_store, I::masked_gather, I::masked_scatter, I::masked_expandload,
      I::masked_compressstore, I::prefetch, I::invariant_start, I::invariant_end,
      // optimiser hints
      I::assume, I::expect, I::expect_with_probability, I::experimental_noalias_scope_decl, I::dbg_declare,
      I::dbg_value, I::dbg_label, I::donothing,
      // vectors
      I::vector_reduce_fadd, I::vector_reduce_fmul, I::vector_reduce_add, I::vector_reduce_mul,
      I::vector_reduce_and, I::vector_reduce_or, I::vector_reduce_xor, I::vector_reduce_smax,
      I::vector_reduce_smin, I::vector_reduce_umax, I::vector_reduce_umin, I::vector_reduce_fmax,
      I::vector_reduce_fmin, I::vector_reduce_fmaximum, I::vector_reduce_fminimum, I::vector_insert,
      I::vector_extract, I::vector_interleave2, I::vector_deinterleave2, I::vector_reverse, I::vector_splice,
      I::experimental_stepvector, I::get_active_lane_mask,
  };
  return kAllowed.count(id) != 0;
}

enum class Fp { Float, Double };
struct LibmFn {
  const char *name;
  Fp type;
  unsigned arity;
};
constexpr LibmFn kLibm[] = {
    {"expf", Fp::Float, 1},   {"logf", Fp::Float, 1},  {"tanhf", Fp::Float, 1},
    {"erff", Fp::Float, 1},   {"powf", Fp::Float, 2},  {"sinf", Fp::Float, 1},
    {"cosf", Fp::Float, 1},   {"expm1f", Fp::Float, 1}, {"log1pf", Fp::Float, 1},
    {"exp", Fp::Double, 1},   {"log", Fp::Double, 1},  {"tanh", Fp::Double, 1},
    {"erf", Fp::Double, 1},   {"pow", Fp::Double, 2},  {"sin", Fp::Double, 1},
    {"cos", Fp::Double, 1},   {"expm1", Fp::Double, 1}, {"log1p", Fp::Double, 1},
    // elementwise trigonometry/hyperbolics and Mod (pure, like the ones above)
    {"tanf", Fp::Float, 1},   {"asinf", Fp::Float, 1}, {"acosf", Fp::Float, 1},
    {"atanf", Fp::Float, 1},  {"sinhf", Fp::Float, 1}, {"coshf", Fp::Float, 1},
    {"asinhf", Fp::Float, 1}, {"acoshf", Fp::Float, 1}, {"atanhf", Fp::Float, 1},
    {"fmodf", Fp::Float, 2},
    {"tan", Fp::Double, 1},   {"asin", Fp::Double, 1}, {"acos", Fp::Double, 1},
    {"atan", Fp::Double, 1},  {"sinh", Fp::Double, 1}, {"cosh", Fp::Double, 1},
    {"asinh", Fp::Double, 1}, {"acosh", Fp::Double, 1}, {"atanh", Fp::Double, 1},
    {"fmod", Fp::Double, 2},
};

const LibmFn *findLibm(llvm::StringRef name) {
  for (const auto &f : kLibm)
    if (name == f.name)
      return &f;
  return nullptr;
}

bool libmTypeMatches(const LibmFn &f, llvm::FunctionType *type) {
  auto isFp = [&](llvm::Type *t) { return f.type == Fp::Float ? t->isFloatTy() : t->isDoubleTy(); };
  if (type->isVarArg() || type->getNumParams() != f.arity || !isFp(type->getReturnType()))
    return false;
  for (llvm::Type *p : type->params())
    if (!isFp(p))
      return false;
  return true;
}

bool isCalled(const llvm::Function &f) {
  for (const llvm::User *u : f.users())
    if (auto *call = llvm::dyn_cast<llvm::CallBase>(u); call && call->getCalledOperand() == &f)
      return true;
  return false;
}

void checkDeclaration(const llvm::Function &f, const std::string &where) {
  std::string name = f.getName().str();
  if (f.isIntrinsic()) {
    if (!allowedIntrinsic(f.getIntrinsicID()))
      fail("{}: intrinsic '{}' is not allowed in vertex code", where, name);
    return;
  }
  if (const LibmFn *lib = findLibm(f.getName())) {
    if (!libmTypeMatches(*lib, f.getFunctionType()))
      fail("{}: function '{}' is declared with the wrong type", where, name);
    return;
  }
  fail("{}: {} external function '{}' is not allowed", where, isCalled(f) ? "call to" : "reference to",
       name);
}

void checkFunctionBody(const llvm::Function &f, const std::string &where) {
  for (const llvm::Instruction &inst : llvm::instructions(f)) {
    auto *call = llvm::dyn_cast<llvm::CallBase>(&inst);
    if (!call)
      continue;
    const llvm::Value *callee = call->getCalledOperand();
    if (llvm::isa<llvm::InlineAsm>(callee))
      fail("{}: function '{}' contains inline assembly, which is not allowed", where,
           f.getName().str());
    if (!llvm::isa<llvm::Function>(callee->stripPointerCasts()))
      fail("{}: function '{}' makes an indirect call, which is not allowed", where,
           f.getName().str());
  }
}

void checkEntry(const llvm::Module &m, const std::string &symbol, const std::string &where) {
  const llvm::Function *f = m.getFunction(symbol);
  if (!f || f->isDeclaration())
    fail("{}: entry function '{}' is not defined in the module", where, symbol);
  if (f->hasLocalLinkage())
    fail("{}: entry function '{}' has internal linkage; it must be externally visible", where, symbol);
  llvm::FunctionType *t = f->getFunctionType();
  if (!t->getReturnType()->isVoidTy() || t->isVarArg() || t->getNumParams() != 2 ||
      !t->getParamType(0)->isPointerTy() || !t->getParamType(1)->isPointerTy())
    fail("{}: entry function '{}' must have type void(ptr, ptr)", where, symbol);
}

} // namespace

const std::vector<std::string> &allowedLibmFunctions() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto &f : kLibm)
      v.push_back(f.name);
    return v;
  }();
  return names;
}

void checkModule(const llvm::Module &m, const std::string &where,
                 const std::vector<std::string> &entrySymbols) {
  std::string problems;
  llvm::raw_string_ostream os(problems);
  if (llvm::verifyModule(m, &os)) {
    os.flush();
    std::string first = problems.substr(0, problems.find('\n'));
    fail("{}: invalid LLVM module: {}", where, first);
  }
  if (!m.getModuleInlineAsm().empty())
    fail("{}: module-level inline assembly is not allowed", where);
  for (const llvm::GlobalVariable &g : m.globals()) {
    std::string name = g.getName().str();
    if (g.getName().starts_with("llvm."))
      fail("{}: special global '{}' is not allowed", where, name);
    if (g.isDeclaration())
      fail("{}: reference to external global '{}' is not allowed", where, name);
    if (!g.hasLocalLinkage())
      fail("{}: global variable '{}' has external linkage; only internal globals are allowed",
           where, name);
    if (g.isThreadLocal())
      fail("{}: thread-local global '{}' is not allowed", where, name);
  }
  if (!m.aliases().empty())
    fail("{}: global alias '{}' is not allowed", where, m.aliases().begin()->getName().str());
  if (!m.ifuncs().empty())
    fail("{}: ifunc '{}' is not allowed", where, m.ifuncs().begin()->getName().str());
  for (const llvm::Function &f : m) {
    if (f.isDeclaration())
      checkDeclaration(f, where);
    else
      checkFunctionBody(f, where);
  }
  for (const std::string &s : entrySymbols)
    checkEntry(m, s, where);
}

std::unique_ptr<llvm::Module> loadCodeModule(llvm::LLVMContext &context,
                                             std::span<const uint8_t> bitcode,
                                             const std::string &where,
                                             const std::vector<std::string> &entrySymbols) {
  llvm::StringRef data(reinterpret_cast<const char *>(bitcode.data()), bitcode.size());
  auto buffer = llvm::MemoryBuffer::getMemBuffer(data, "vertex-code", false);
  auto parsed = llvm::parseBitcodeFile(buffer->getMemBufferRef(), context);
  if (!parsed) {
    std::string message = llvm::toString(parsed.takeError());
    fail("{}: invalid bitcode: {}", where, message.substr(0, message.find('\n')));
  }
  std::unique_ptr<llvm::Module> m = std::move(*parsed);
  // Materialise everything now so a corrupt function body fails here, not in the JIT.
  if (llvm::Error err = m->materializeAll()) {
    std::string message = llvm::toString(std::move(err));
    fail("{}: invalid bitcode: {}", where, message.substr(0, message.find('\n')));
  }
  checkModule(*m, where, entrySymbols);
  return m;
}

} // namespace popc::runtime
