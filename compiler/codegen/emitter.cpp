#include "compiler/codegen/emitter.h"

#include "support/error.h"

#include <llvm/IR/Constants.h>
#include <llvm/IR/Function.h>

#include <algorithm>

namespace popc::codegen::detail {

using namespace llvm;

Emitter::Emitter(Module &module) : module_(module), b_(module.getContext()) {}

void Emitter::beginKernel(const std::string &symbol, const std::vector<FieldInfo> &fieldInfos,
                          const std::vector<std::pair<uint32_t, uint32_t>> &optionalFields) {
  const size_t numFields = fieldInfos.size();
  auto isImmediate = [&](size_t i) { return fieldInfos[i].access == FieldAccess::Immediate; };
  LLVMContext &c = ctx();
  Type *ptrTy = PointerType::getUnqual(c);
  auto *entryTy = FunctionType::get(Type::getVoidTy(c), {ptrTy, ptrTy}, false);
  entry_ = Function::Create(entryTy, GlobalValue::ExternalLinkage, symbol, module_);
  entry_->addFnAttr(Attribute::NoUnwind);
  Argument *tileBase = entry_->getArg(0);
  Argument *offsets = entry_->getArg(1);
  tileBase->setName("tile_base");
  offsets->setName("field_offsets");

  std::vector<Type *> bodyParams;
  for (size_t i = 0; i < numFields; ++i)
    bodyParams.push_back(isImmediate(i) ? b_.getInt64Ty() : ptrTy);
  bodyParams.insert(bodyParams.end(), optionalFields.size(), b_.getInt1Ty());
  auto *bodyTy = FunctionType::get(Type::getVoidTy(c), bodyParams, false);
  Function *body = Function::Create(bodyTy, GlobalValue::InternalLinkage, symbol + ".body", module_);
  body->addFnAttr(Attribute::AlwaysInline);
  body->addFnAttr(Attribute::NoUnwind);
  for (unsigned i = 0; i < numFields; ++i) {
    body->getArg(i)->setName("f" + std::to_string(i));
    if (isImmediate(i))
      continue;
    // Valid because no output field overlaps another field (see README); a
    // stand-in for an absent optional field is read-only, as that field is.
    body->addParamAttr(i, Attribute::NoAlias);
    body->addParamAttr(i, Attribute::NoCapture);
  }

  b_.SetInsertPoint(BasicBlock::Create(c, "entry", entry_));
  std::vector<Value *> ptrs, offs;
  for (unsigned i = 0; i < numFields; ++i) {
    Value *offPtr = b_.CreateInBoundsGEP(b_.getInt32Ty(), offsets, b_.getInt64(i));
    Value *off = b_.CreateAlignedLoad(b_.getInt32Ty(), offPtr, Align(4), "off" + std::to_string(i));
    offs.push_back(off);
    Value *off64 = b_.CreateZExt(off, b_.getInt64Ty());
    ptrs.push_back(isImmediate(i) ? off64
                                  : b_.CreateInBoundsGEP(b_.getInt8Ty(), tileBase, off64, "field" + std::to_string(i)));
  }
  // Compared as offsets here, not as the body's noalias pointers.
  for (const auto &[field, standIn] : optionalFields)
    ptrs.push_back(b_.CreateICmpNE(offs.at(field), offs.at(standIn), "present" + std::to_string(field)));
  b_.CreateCall(body, ptrs);
  b_.CreateRetVoid();

  b_.SetInsertPoint(BasicBlock::Create(c, "entry", body));
  fields_.clear();
  present_.clear();
  for (Argument &arg : body->args())
    (arg.getArgNo() < numFields ? fields_ : present_).push_back(&arg);
}

void Emitter::endKernel() {
  b_.CreateRetVoid();
  fields_.clear();
  present_.clear();
  entry_ = nullptr;
}

Type *Emitter::type(DType t) {
  switch (t) {
  case DType::F32: return b_.getFloatTy();
  case DType::F64: return b_.getDoubleTy();
  case DType::F16: return b_.getInt16Ty(); // only ever copied as raw bits
  default: return b_.getIntNTy(static_cast<unsigned>(dtypeSize(t) * 8));
  }
}

Value *Emitter::constant(DType t, double v) {
  if (isFloat(t))
    return ConstantFP::get(type(t), v);
  return ConstantInt::get(type(t), static_cast<uint64_t>(static_cast<int64_t>(v)), true);
}

Value *Emitter::gep(DType t, Value *base, Value *index) {
  return b_.CreateInBoundsGEP(type(t), base, index);
}

Value *Emitter::load(DType t, Value *base, Value *index) {
  return b_.CreateAlignedLoad(type(t), gep(t, base, index), Align(dtypeSize(t)));
}

void Emitter::store(DType t, Value *value, Value *base, Value *index) {
  b_.CreateAlignedStore(value, gep(t, base, index), Align(dtypeSize(t)));
}

FixedVectorType *Emitter::vecType(DType t, unsigned lanes) { return FixedVectorType::get(type(t), lanes); }

namespace {

Constant *maskConstant(LLVMContext &c, const std::vector<bool> &lanes) {
  std::vector<Constant *> bits;
  for (bool on : lanes)
    bits.push_back(ConstantInt::getBool(c, on));
  return ConstantVector::get(bits);
}

} // namespace

Value *Emitter::loadLanes(DType t, Value *base, Value *index, const std::vector<bool> &lanes, int64_t stride,
                          Value *enable) {
  const auto n = static_cast<unsigned>(lanes.size());
  const Align align(dtypeSize(t));
  // Span of memory lanes: element i of the span is base[index + i]; result
  // lane l is span lane l*stride.
  const auto width = static_cast<unsigned>(n * stride);
  std::vector<bool> on(width, false);
  for (unsigned l = 0; l < n; ++l)
    on[l * stride] = lanes[l];
  auto first = static_cast<unsigned>(std::find(on.begin(), on.end(), true) - on.begin());
  if (first == width)
    return Constant::getNullValue(vecType(t, n));
  // Start the access at the first accessed element; shift back below.
  std::vector<bool> shifted(width, false);
  for (unsigned i = first; i < width; ++i)
    shifted[i - first] = on[i];
  Value *ptr = b_.CreateGEP(type(t), base, first ? b_.CreateAdd(index, i64(first)) : index); // not inbounds
  Value *span;
  if (stride == 1 && first == 0 && !enable && std::all_of(on.begin(), on.end(), [](bool x) { return x; })) {
    span = b_.CreateAlignedLoad(vecType(t, width), ptr, align);
  } else {
    Value *mask = maskConstant(ctx(), shifted);
    if (enable)
      mask = b_.CreateAnd(mask, b_.CreateVectorSplat(width, enable));
    span = b_.CreateMaskedLoad(vecType(t, width), ptr, align, mask, Constant::getNullValue(vecType(t, width)));
  }
  if (stride == 1 && first == 0)
    return span;
  // Result lane l = span lane l*stride - first, or 0 (lane `width` of the zero operand).
  std::vector<int> pick;
  for (unsigned l = 0; l < n; ++l)
    pick.push_back(lanes[l] ? static_cast<int>(l * stride - first) : static_cast<int>(width));
  return b_.CreateShuffleVector(span, Constant::getNullValue(vecType(t, width)), pick);
}

void Emitter::storeLanes(DType t, Value *value, Value *base, Value *index, const std::vector<bool> &lanes) {
  const Align align(dtypeSize(t));
  Value *ptr = b_.CreateGEP(type(t), base, index);
  if (std::all_of(lanes.begin(), lanes.end(), [](bool on) { return on; }))
    b_.CreateAlignedStore(value, ptr, align);
  else
    b_.CreateMaskedStore(value, ptr, align, maskConstant(ctx(), lanes));
}

Value *Emitter::fmulAdd(Value *a, Value *b, Value *c) {
  return b_.CreateIntrinsic(Intrinsic::fmuladd, {a->getType()}, {a, b, c});
}

Emitter::Carried Emitter::forLoop(Value *begin, Value *end, Carried init,
                                  const std::function<Carried(Value *, const Carried &)> &body) {
  auto *cb = dyn_cast<ConstantInt>(begin);
  auto *ce = dyn_cast<ConstantInt>(end);
  bool known = cb && ce;
  if (known && cb->getSExtValue() >= ce->getSExtValue()) {
    lastLatch_ = nullptr; // no loop to keep rolled
    return init;          // zero-trip loop: nothing to emit
  }
  LLVMContext &c = ctx();
  Function *f = b_.GetInsertBlock()->getParent();
  BasicBlock *guard = nullptr;
  BasicBlock *exit = BasicBlock::Create(c, "exit"); // inserted after the body
  if (!known) {
    guard = b_.GetInsertBlock();
    BasicBlock *ph = BasicBlock::Create(c, "preheader", f);
    b_.CreateCondBr(b_.CreateICmpSLT(begin, end), ph, exit);
    b_.SetInsertPoint(ph);
  }
  BasicBlock *preheader = b_.GetInsertBlock();
  BasicBlock *header = BasicBlock::Create(c, "loop", f);
  b_.CreateBr(header);
  b_.SetInsertPoint(header);
  PHINode *iv = b_.CreatePHI(b_.getInt64Ty(), 2, "i");
  iv->addIncoming(begin, preheader);
  Carried cur;
  std::vector<PHINode *> phis;
  for (Value *v : init) {
    PHINode *p = b_.CreatePHI(v->getType(), 2, "acc");
    p->addIncoming(v, preheader);
    phis.push_back(p);
    cur.push_back(p);
  }
  Carried next = body(iv, cur);
  POPC_ASSERT(next.size() == init.size());
  BasicBlock *latch = BasicBlock::Create(c, "latch", f);
  b_.CreateBr(latch);
  b_.SetInsertPoint(latch);
  Value *ivNext = b_.CreateAdd(iv, b_.getInt64(1), "i.next", /*HasNUW=*/true, /*HasNSW=*/true);
  iv->addIncoming(ivNext, latch);
  for (size_t j = 0; j < phis.size(); ++j)
    phis[j]->addIncoming(next[j], latch);
  lastLatch_ = b_.CreateCondBr(b_.CreateICmpNE(ivNext, end), header, exit);
  exit->insertInto(f);
  b_.SetInsertPoint(exit);
  if (!guard)
    return next;
  Carried result;
  for (size_t j = 0; j < init.size(); ++j) {
    PHINode *p = b_.CreatePHI(init[j]->getType(), 2, "acc.final");
    p->addIncoming(init[j], guard);
    p->addIncoming(next[j], latch);
    result.push_back(p);
  }
  return result;
}

void Emitter::forLoop(Value *begin, Value *end, const std::function<void(Value *)> &body) {
  forLoop(begin, end, {}, [&](Value *iv, const Carried &) {
    body(iv);
    return Carried{};
  });
}

void Emitter::ifThen(Value *cond, const std::function<void()> &then) {
  ifThen(cond, {}, [&](Carried &) { then(); });
}

Emitter::Carried Emitter::ifThen(Value *cond, Carried values, const std::function<void(Carried &)> &then) {
  Function *f = b_.GetInsertBlock()->getParent();
  BasicBlock *from = b_.GetInsertBlock();
  BasicBlock *thenBlock = BasicBlock::Create(ctx(), "then", f);
  BasicBlock *merge = BasicBlock::Create(ctx(), "endif");
  b_.CreateCondBr(cond, thenBlock, merge);
  b_.SetInsertPoint(thenBlock);
  Carried updated = values;
  then(updated);
  POPC_ASSERT(updated.size() == values.size());
  BasicBlock *thenEnd = b_.GetInsertBlock();
  b_.CreateBr(merge);
  merge->insertInto(f);
  b_.SetInsertPoint(merge);
  for (size_t i = 0; i < values.size(); ++i) {
    if (updated[i] == values[i])
      continue;
    PHINode *p = b_.CreatePHI(values[i]->getType(), 2);
    p->addIncoming(updated[i], thenEnd);
    p->addIncoming(values[i], from);
    values[i] = p;
  }
  return values;
}

Value *Emitter::unaryIntrinsic(Intrinsic::ID id, Value *x) {
  return b_.CreateUnaryIntrinsic(id, x);
}

Value *Emitter::binaryIntrinsic(Intrinsic::ID id, Value *x, Value *y) {
  return b_.CreateBinaryIntrinsic(id, x, y);
}

Value *Emitter::libm(const std::string &floatName, std::vector<Value *> args) {
  Type *t = args.at(0)->getType();
  std::string name = floatName;
  if (t->isDoubleTy())
    name.pop_back(); // tanhf → tanh
  std::vector<Type *> params(args.size(), t);
  FunctionCallee callee = module_.getOrInsertFunction(name, FunctionType::get(t, params, false));
  // Like clang with -fno-math-errno: pure, so loops around the call still optimise.
  auto *fn = cast<Function>(callee.getCallee());
  fn->setDoesNotAccessMemory();
  fn->setDoesNotThrow();
  fn->addFnAttr(Attribute::WillReturn);
  CallInst *call = b_.CreateCall(callee, args);
  call->setDoesNotAccessMemory();
  call->setDoesNotThrow();
  return call;
}

static Value *withReassoc(Value *v) {
  if (auto *inst = dyn_cast<Instruction>(v); inst && isa<FPMathOperator>(inst)) {
    FastMathFlags fmf = inst->getFastMathFlags();
    fmf.setAllowReassoc();
    inst->setFastMathFlags(fmf);
  }
  return v;
}

Value *Emitter::accAdd(Value *x, Value *y) {
  if (x->getType()->isFloatingPointTy())
    return withReassoc(b_.CreateFAdd(x, y));
  return b_.CreateAdd(x, y);
}

Value *Emitter::accMul(Value *x, Value *y) {
  if (x->getType()->isFloatingPointTy())
    return withReassoc(b_.CreateFMul(x, y));
  return b_.CreateMul(x, y);
}

Value *Emitter::add(DType t, Value *x, Value *y) { return isFloat(t) ? b_.CreateFAdd(x, y) : b_.CreateAdd(x, y); }
Value *Emitter::sub(DType t, Value *x, Value *y) { return isFloat(t) ? b_.CreateFSub(x, y) : b_.CreateSub(x, y); }
Value *Emitter::mul(DType t, Value *x, Value *y) { return isFloat(t) ? b_.CreateFMul(x, y) : b_.CreateMul(x, y); }
Value *Emitter::max(DType t, Value *x, Value *y) {
  return binaryIntrinsic(isFloat(t) ? Intrinsic::maxnum : Intrinsic::smax, x, y);
}
Value *Emitter::min(DType t, Value *x, Value *y) {
  return binaryIntrinsic(isFloat(t) ? Intrinsic::minnum : Intrinsic::smin, x, y);
}

uint32_t fieldBytes(const char *what, std::initializer_list<uint64_t> dims, DType t) {
  uint64_t bytes = dtypeSize(t);
  bool overflow = false;
  for (uint64_t d : dims)
    overflow |= __builtin_mul_overflow(bytes, d, &bytes);
  if (overflow || bytes > UINT32_MAX)
    fail("codegen: field {} of {} exceeds the 4 GiB a vertex field can address: split the work over more "
         "vertices",
         what, dtypeName(t));
  return static_cast<uint32_t>(bytes);
}

void unsupported(const std::string &op, DType t) {
  fail("codegen: {} not supported for {}", op, dtypeName(t));
}

Emitter::Carried Emitter::unrolledLoop(int64_t count, int64_t unroll, Carried init,
                                        const std::function<void(Value *i, Carried &acc, int64_t u)> &body) {
  Carried sum = forLoop(count / unroll, std::move(init), [&](Value *g, const Carried &cur) {
    Carried next = cur;
    Value *first = b_.CreateMul(g, i64(unroll));
    for (int64_t u = 0; u < unroll; ++u)
      body(b_.CreateAdd(first, i64(u)), next, u);
    return next;
  });
  if (count % unroll)
    sum = forLoop(i64(count / unroll * unroll), i64(count), sum, [&](Value *i, const Carried &cur) {
      Carried next = cur;
      body(i, next, 0);
      return next;
    });
  return sum;
}

void Emitter::setLastLoopHint(llvm::ArrayRef<Metadata *> hint) {
  if (!lastLatch_)
    return;
  LLVMContext &c = ctx();
  Metadata *args[] = {nullptr, MDNode::get(c, hint)};
  MDNode *id = MDNode::getDistinct(c, args);
  id->replaceOperandWith(0, id); // a loop ID refers to itself
  lastLatch_->setMetadata(LLVMContext::MD_loop, id);
}

void Emitter::keepLastLoopRolled() { setLastLoopHint({MDString::get(ctx(), "llvm.loop.unroll.disable")}); }

void Emitter::foldLastLoopTail() {
  setLastLoopHint({MDString::get(ctx(), "llvm.loop.vectorize.predicate.enable"),
                   ConstantAsMetadata::get(ConstantInt::getTrue(ctx()))});
}

Emitter::Carried Emitter::unrolledLoop(Value *count, int64_t unroll, Carried init,
                                        const std::function<void(Value *i, Carried &acc, int64_t u)> &body) {
  if (auto *c = dyn_cast<ConstantInt>(count))
    return unrolledLoop(c->getSExtValue(), unroll, std::move(init), body);
  Value *groups = unroll == 1 ? count : b_.CreateUDiv(count, i64(unroll));
  Carried sum = forLoop(i64(0), groups, std::move(init), [&](Value *g, const Carried &cur) {
    Carried next = cur;
    Value *first = b_.CreateMul(g, i64(unroll));
    for (int64_t u = 0; u < unroll; ++u)
      body(b_.CreateAdd(first, i64(u)), next, u);
    return next;
  });
  if (unroll > 1) {
    sum = forLoop(b_.CreateMul(groups, i64(unroll)), count, sum, [&](Value *i, const Carried &cur) {
      Carried next = cur;
      body(i, next, 0);
      return next;
    });
    // At most unroll - 1 trips: LLVM's run-time unrolling of it (a prologue
    // and an unrolled copy) is only code to compile.
    keepLastLoopRolled();
  }
  return sum;
}

} // namespace popc::codegen::detail
