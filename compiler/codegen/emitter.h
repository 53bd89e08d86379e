// Internal to compiler/codegen: the IRBuilder helpers every kernel kind uses
// (vertex function frame, counted loops, typed loads/stores, math).
#pragma once
#include "compiler/codegen/kernels.h"
#include "support/dtype.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

namespace popc::codegen::detail {

using llvm::Value;

class Emitter {
public:
  explicit Emitter(llvm::Module &module);

  // Starts vertex `symbol` with the ABI void(i8* tile_base, i32* field_offsets).
  // The entry computes the field pointers and calls an internal always-inline
  // body whose pointer parameters are noalias (fields never overlap), so after
  // inlining every access carries scoped-noalias metadata. The builder is left
  // in the body; fields() are its pointer parameters.
  // optionalFields: KernelDesc's; the body gets an i1 "present" per pair.
  // Immediate fields come to the body as i64 numbers (immediate(i)), the
  // others as pointers (field(i)).
  void beginKernel(const std::string &symbol, const std::vector<FieldInfo> &fields,
                   const std::vector<std::pair<uint32_t, uint32_t>> &optionalFields = {});
  void endKernel();
  Value *field(size_t i) const { return fields_.at(i); }
  // The number immediate field i holds, as i64.
  Value *immediate(size_t i) const { return fields_.at(i); }
  // Whether optional field pair k's field was given (its offset differs from its stand-in's).
  Value *present(size_t k) const { return present_.at(k); }

  llvm::IRBuilder<> &b() { return b_; }
  llvm::LLVMContext &ctx() { return module_.getContext(); }

  // Element types: F32/F64 → float/double, integers → iN of the same size.
  llvm::Type *type(DType t);
  bool isFloat(DType t) const { return t == DType::F32 || t == DType::F64; }

  Value *i64(int64_t v) { return b_.getInt64(static_cast<uint64_t>(v)); }
  Value *fconst(DType t, double v) { return llvm::ConstantFP::get(type(t), v); }
  Value *constant(DType t, double v); // float or integer constant of type t

  // Typed element access: base[index] (index is i64).
  Value *gep(DType t, Value *base, Value *index);
  Value *load(DType t, Value *base, Value *index);
  void store(DType t, Value *value, Value *base, Value *index);

  // Vectors. lanes[l] says whether lane l is accessed; the element of lane l
  // is base[index + l*stride] (stride 1 for stores). Lanes that are off are
  // never touched and load as 0, so `index` may point outside the field for
  // them (e.g. into the left padding). The address given to a masked access
  // is always that of its first accessed element (leading off lanes are
  // skipped and shuffled back), so it lies inside the field: address
  // confinement (the runtime's memory sandbox) never moves accessed lanes.
  // `enable` (i1, optional) switches all lanes off at run time. All-on
  // stride-1 accesses are plain vector loads/stores, the rest masked ones.
  llvm::FixedVectorType *vecType(DType t, unsigned lanes);
  Value *splat(unsigned lanes, Value *scalar) { return b_.CreateVectorSplat(lanes, scalar); }
  Value *loadLanes(DType t, Value *base, Value *index, const std::vector<bool> &lanes, int64_t stride = 1,
                   Value *enable = nullptr);
  // Stores lanes [0, n) with lane 0 on (a tail mask).
  void storeLanes(DType t, Value *value, Value *base, Value *index, const std::vector<bool> &lanes);
  // a*b + c, fused by the host where it has FMA (llvm.fmuladd); scalars or vectors.
  Value *fmulAdd(Value *a, Value *b, Value *c);
  // a*b + c of element type t: fmulAdd for floats, a wrapping multiply-add for integers.
  Value *mulAdd(DType t, Value *a, Value *b, Value *c) { return isFloat(t) ? fmulAdd(a, b, c) : add(t, mul(t, a, b), c); }

  // Counted loop for (iv = begin; iv < end; ++iv) in rotated canonical form
  // (guard if the trip count is not a known positive constant, preheader,
  // header with phi induction, latch). `carried` are loop-carried values
  // (accumulators): the body receives their current values and returns the
  // next ones; the result is their final values (init if the loop runs 0 times).
  using Carried = std::vector<Value *>;
  Carried forLoop(Value *begin, Value *end, Carried init,
                  const std::function<Carried(Value *iv, const Carried &)> &body);
  void forLoop(Value *begin, Value *end, const std::function<void(Value *iv)> &body);
  void forLoop(int64_t tripCount, const std::function<void(Value *iv)> &body) {
    forLoop(i64(0), i64(tripCount), body);
  }
  Carried forLoop(int64_t tripCount, Carried init,
                  const std::function<Carried(Value *iv, const Carried &)> &body) {
    return forLoop(i64(0), i64(tripCount), std::move(init), body);
  }
  // A reduction over i in [0, count) unrolled `unroll` times: the body gets the
  // index, the accumulators to update and the copy u in [0, unroll) (so copies
  // can use separate accumulator sets); a remainder loop runs the last
  // count % unroll indices as copy 0.
  Carried unrolledLoop(int64_t count, int64_t unroll, Carried init,
                       const std::function<void(Value *i, Carried &acc, int64_t u)> &body);
  // The same with a count known at run time (i64; a constant takes the path above).
  Carried unrolledLoop(Value *count, int64_t unroll, Carried init,
                       const std::function<void(Value *i, Carried &acc, int64_t u)> &body);
  // Asks LLVM not to unroll the loop forLoop emitted last (the one whose end
  // was emitted most recently; none if that forLoop had zero trips), whose
  // body is long enough on its own. Unrolling never changes the arithmetic.
  void keepLastLoopRolled();
  // Asks LLVM to vectorise the loop forLoop emitted last with its tail
  // folded into masked iterations (llvm.loop.vectorize.predicate.enable):
  // one vector loop instead of a vector loop, an epilogue and a scalar
  // remainder, where the target can mask. Lane-wise loops compute the same.
  void foldLastLoopTail();
  // if (cond) { then() }
  void ifThen(Value *cond, const std::function<void()> &then);
  // The same for values: `then` updates them; the result is its values where
  // cond holds, `values` where it does not.
  Carried ifThen(Value *cond, Carried values, const std::function<void(Carried &)> &then);

  // Math on float values (float or double). Intrinsics where LLVM has one,
  // otherwise calls to the allow-listed libm functions (tanhf erff, ...).
  Value *unaryIntrinsic(llvm::Intrinsic::ID id, Value *x);
  Value *binaryIntrinsic(llvm::Intrinsic::ID id, Value *x, Value *y);
  Value *libm(const std::string &floatName, std::vector<Value *> args); // "tanhf" → tanh for double
  Value *exp(Value *x) { return unaryIntrinsic(llvm::Intrinsic::exp, x); }
  Value *log(Value *x) { return unaryIntrinsic(llvm::Intrinsic::log, x); }
  Value *fmax(Value *x, Value *y) { return binaryIntrinsic(llvm::Intrinsic::maxnum, x, y); }
  Value *fmin(Value *x, Value *y) { return binaryIntrinsic(llvm::Intrinsic::minnum, x, y); }
  // Reassociable add/mul for accumulations, so the host JIT may vectorise reductions.
  Value *accAdd(Value *x, Value *y);
  Value *accMul(Value *x, Value *y);

  // Type-generic arithmetic (float or signed integer) for dtype t.
  Value *add(DType t, Value *x, Value *y);
  Value *sub(DType t, Value *x, Value *y);
  Value *mul(DType t, Value *x, Value *y);
  Value *max(DType t, Value *x, Value *y);
  Value *min(DType t, Value *x, Value *y);

private:
  llvm::Module &module_;
  llvm::IRBuilder<> b_;
  std::vector<Value *> fields_;
  std::vector<Value *> present_;
  llvm::Instruction *lastLatch_ = nullptr; // the back edge of the loop forLoop emitted last
  // Gives that loop the ID !{self, !{hint...}} (replacing any it had).
  void setLastLoopHint(llvm::ArrayRef<llvm::Metadata *> hint);
  llvm::Function *entry_ = nullptr;
};

// Output size checks shared by the kernel kinds: element counts times element
// size must fit the u32 field sizes of the ABI.
uint32_t fieldBytes(const char *what, std::initializer_list<uint64_t> dims, DType t);

// "codegen: <op> not supported for <dtype>"
[[noreturn]] void unsupported(const std::string &op, DType t);

} // namespace popc::codegen::detail
