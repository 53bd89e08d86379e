#include "runtime/memory_sandbox.h"

#include "support/error.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/DataLayout.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/Instructions.h>
#include <llvm/IR/IntrinsicInst.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <optional>
#include <vector>

namespace popc::runtime {

namespace {

// Vertices run on pool threads with ordinary stacks; a frame larger than a
// guard page could step over it, so frames stay small.
constexpr uint64_t kMaxStackBytes = 64 << 10;

bool containsPointer(llvm::Type *t) {
  if (t->isPtrOrPtrVectorTy())
    return true;
  for (llvm::Type *sub : t->subtypes())
    if (containsPointer(sub))
      return true;
  return false;
}

// Intrinsics that may appear after O3 and touch no memory through their
// pointer operands (hints and markers).
bool isMarker(llvm::Intrinsic::ID id) {
  namespace I = llvm::Intrinsic;
  switch (id) {
  case I::lifetime_start:
  case I::lifetime_end:
  case I::invariant_start:
  case I::invariant_end:
  case I::prefetch:
  case I::assume:
  case I::experimental_noalias_scope_decl:
  case I::dbg_declare:
  case I::dbg_value:
  case I::dbg_label:
  case I::donothing:
    return true;
  default:
    return false;
  }
}

// Where a confined access may land: inside `object` (a stack object or a
// module global of `objectSize` bytes), or (object null) within the tile.
struct Region {
  llvm::Value *object = nullptr;
  uint64_t objectSize = 0;
};

class Confiner {
public:
  Confiner(llvm::Function &f, bool entry, unsigned tableBytes, const MemorySandbox &sandbox, const std::string &where)
      : f_(f), dl_(f.getParent()->getDataLayout()), entry_(entry), tableBytes_(tableBytes), guard_(sandbox.guard),
        minWindow_(sandbox.minWindow), slotBelow_(sandbox.limitSlotBelow), where_(where), b_(f.getContext()) {
    i64_ = b_.getInt64Ty();
  }

  void run() {
    std::vector<llvm::Instruction *> work;
    for (llvm::Instruction &inst : llvm::instructions(f_))
      work.push_back(&inst);
    if (entry_)
      findAnchors(work);
    uint64_t stackBytes = 0;
    for (llvm::Instruction *inst : work) {
      if (auto *bo = llvm::dyn_cast<llvm::BinaryOperator>(inst)) {
        guardDivision(*bo);
        continue;
      }
      if (auto *a = llvm::dyn_cast<llvm::AllocaInst>(inst)) {
        std::optional<llvm::TypeSize> size = a->getAllocationSize(dl_);
        if (!a->isStaticAlloca() || !size || size->isScalable())
          refuse("allocates stack memory of dynamic size");
        stackBytes += size->getFixedValue();
        if (stackBytes > kMaxStackBytes)
          refuse(fmt::format("uses more than {} bytes of stack", kMaxStackBytes));
      } else if (auto *load = llvm::dyn_cast<llvm::LoadInst>(inst)) {
        confineOperand(*load, 0, sizeOf(load->getType()), false, true);
      } else if (auto *store = llvm::dyn_cast<llvm::StoreInst>(inst)) {
        confineOperand(*store, 1, sizeOf(store->getValueOperand()->getType()), true, false);
      } else if (llvm::isa<llvm::AtomicRMWInst, llvm::AtomicCmpXchgInst>(inst)) {
        refuse("uses atomic memory operations, which vertex code may not");
      } else if (auto *call = llvm::dyn_cast<llvm::CallBase>(inst)) {
        confineCall(*call);
      } else if (inst->mayReadOrWriteMemory() && !llvm::isa<llvm::FenceInst>(inst)) {
        refuse(fmt::format("uses the '{}' instruction, which the memory sandbox does not support",
                           inst->getOpcodeName()));
      }
    }
  }

private:
  // Integer division traps on x86 for a zero divisor and for INT_MIN / -1,
  // which would kill the whole process. Divide by 1 instead of 0 (any result
  // is acceptable there) and compute x / -1 as -x and x % -1 as 0 without
  // dividing, so valid code keeps its results and no divisor can trap.
  void guardDivision(llvm::BinaryOperator &op) {
    const auto opcode = op.getOpcode();
    const bool isSigned = opcode == llvm::Instruction::SDiv || opcode == llvm::Instruction::SRem;
    if (!isSigned && opcode != llvm::Instruction::UDiv && opcode != llvm::Instruction::URem)
      return;
    llvm::Value *d = op.getOperand(1);
    if (canNeverTrap(d, isSigned))
      return;
    b_.SetInsertPoint(&op);
    llvm::Type *t = d->getType();
    llvm::Value *frozen = b_.CreateFreeze(d);
    llvm::Value *zero = llvm::Constant::getNullValue(t), *one = llvm::ConstantInt::get(t, 1);
    llvm::Value *isZero = b_.CreateICmpEQ(frozen, zero);
    if (!isSigned) {
      op.setOperand(1, b_.CreateSelect(isZero, one, frozen));
      return;
    }
    llvm::Value *isMinusOne = b_.CreateICmpEQ(frozen, llvm::Constant::getAllOnesValue(t));
    op.setOperand(1, b_.CreateSelect(b_.CreateOr(isZero, isMinusOne), one, frozen));
    b_.SetInsertPoint(op.getNextNode());
    llvm::Value *byMinusOne = opcode == llvm::Instruction::SDiv ? b_.CreateSub(zero, op.getOperand(0)) : zero;
    llvm::Value *result = b_.CreateSelect(isMinusOne, byMinusOne, &op);
    op.replaceUsesWithIf(result, [&](llvm::Use &u) { return u.getUser() != result; });
  }

  // A constant divisor with no element that is 0 (or -1 when signed).
  static bool canNeverTrap(llvm::Value *d, bool isSigned) {
    auto safe = [&](const llvm::Constant *c) {
      const auto *ci = llvm::dyn_cast_or_null<llvm::ConstantInt>(c);
      return ci && !ci->isZero() && !(isSigned && ci->isMinusOne());
    };
    if (auto *ci = llvm::dyn_cast<llvm::ConstantInt>(d))
      return safe(ci);
    if (auto *cv = llvm::dyn_cast<llvm::ConstantDataVector>(d)) {
      for (unsigned i = 0; i < cv->getNumElements(); ++i)
        if (!safe(cv->getElementAsConstant(i)))
          return false;
      return true;
    }
    return false;
  }

  [[noreturn]] void refuse(const std::string &what) const {
    fail("{}: function '{}' {} (after optimisation)", where_, f_.getName().str(), what);
  }

  uint64_t sizeOf(llvm::Type *t) const {
    llvm::TypeSize size = dl_.getTypeStoreSize(t);
    if (size.isScalable())
      refuse("accesses memory with a scalable vector type");
    return size.getFixedValue();
  }

  void needEntry() const {
    if (!entry_)
      refuse("is not a vertex entry but accesses memory; helpers must be inlined into entries");
  }

  llvm::Argument *base() const { return f_.getArg(0); }

  // Accesses whose address provably stays in bounds keep it as is.
  bool provablySafe(llvm::Value *p, uint64_t size, bool isLoad) const {
    if (p->getType()->isVectorTy())
      return false;
    llvm::APInt offset(dl_.getIndexTypeSizeInBits(p->getType()), 0);
    const llvm::Value *stripped = p->stripAndAccumulateConstantOffsets(dl_, offset, true);
    if (offset.isNegative())
      return false;
    uint64_t o = offset.getZExtValue();
    if (isLoad && stripped == f_.getArg(1) && o + size <= tableBytes_ && o <= tableBytes_)
      return true; // the field-offset table
    return stripped == base() && o < minWindow_ && o + size + guard_ <= minWindow_;
  }

  // The window's size W, loaded once at the entry from the slot below it
  // (where no vertex can write). Made after the work list, so not confined.
  llvm::Value *window() {
    if (!window_) {
      llvm::IRBuilder<> ib(f_.getContext());
      ib.SetInsertPoint(f_.getEntryBlock().getFirstInsertionPt());
      llvm::Value *slot = ib.CreateConstGEP1_64(ib.getInt8Ty(), base(), -int64_t(slotBelow_));
      window_ = ib.CreateAlignedLoad(i64_, slot, llvm::Align(8), "sfi.window");
    }
    return window_;
  }

  // How far into the window an access of `size` bytes (`dynamicSize` when
  // not constant) may start: W - size, never negative (size <= minWindow
  // <= W, or a dynamic size already clamped to W).
  llvm::Value *roomFor(uint64_t size, llvm::Value *dynamicSize) {
    return b_.CreateSub(window(), dynamicSize ? dynamicSize : b_.getInt64(size));
  }

  // tile_base - guard + umin(x, room): x is an offset from the window's
  // start (any value), room how far into the window an access may start.
  llvm::Value *clampIntoWindow(llvm::Value *x, llvm::Value *room) {
    llvm::Value *inside = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, x, room);
    return b_.CreateSub(inside, llvm::ConstantInt::get(x->getType(), guard_));
  }

  Region regionOf(llvm::Value *p, bool isStore) const {
    if (p->getType()->getScalarType()->getPointerAddressSpace() != 0)
      refuse("accesses memory in a non-default address space");
    llvm::SmallVector<const llvm::Value *, 4> objects;
    llvm::getUnderlyingObjects(p, objects, nullptr, 0);
    if (objects.size() != 1)
      return {};
    const llvm::Value *object = objects.front();
    if (auto *a = llvm::dyn_cast<llvm::AllocaInst>(object)) {
      std::optional<llvm::TypeSize> size = a->getAllocationSize(dl_);
      if (size && !size->isScalable())
        return {const_cast<llvm::AllocaInst *>(a), size->getFixedValue()};
    } else if (auto *g = llvm::dyn_cast<llvm::GlobalVariable>(object)) {
      if (g->getValueType()->isSized() && g->getAddressSpace() == 0) {
        if (isStore && g->isConstant())
          refuse(fmt::format("stores to the constant global '{}'", g->getName().str()));
        return {const_cast<llvm::GlobalVariable *>(g), dl_.getTypeAllocSize(g->getValueType()).getFixedValue()};
      }
    }
    return {};
  }

  // The largest access of constant size a region takes with one clamp.
  uint64_t limitOf(const Region &r) const { return r.object ? r.objectSize : minWindow_; }

  // An anchor is an access that valid code makes whenever its block runs, at
  // an address the sandbox leaves as it is: a load or store, or a masked one
  // with a constant mask (its first accessed lane lies in the tile, so its
  // address is at most a vector below it, within the guard). A masked access
  // with a run-time mask is no anchor: with every lane off, valid code may
  // point it anywhere (a kernel row in the padding).
  // Its pointer and the bytes it accesses.
  std::pair<llvm::Value *, uint64_t> anchorPointer(llvm::Instruction &inst) const {
    if (auto *load = llvm::dyn_cast<llvm::LoadInst>(&inst))
      return {load->getPointerOperand(), sizeOf(load->getType())};
    if (auto *store = llvm::dyn_cast<llvm::StoreInst>(&inst))
      return {store->getPointerOperand(), sizeOf(store->getValueOperand()->getType())};
    auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
    if (!call)
      return {};
    unsigned ptrArg = 0, maskArg = 0;
    llvm::Type *accessed = nullptr;
    if (call->getIntrinsicID() == llvm::Intrinsic::masked_load) {
      ptrArg = 0;
      maskArg = 2;
      accessed = call->getType();
    } else if (call->getIntrinsicID() == llvm::Intrinsic::masked_store) {
      ptrArg = 1;
      maskArg = 3;
      accessed = call->getArgOperand(0)->getType();
    } else {
      return {};
    }
    auto *mask = llvm::dyn_cast<llvm::Constant>(call->getArgOperand(maskArg));
    if (!mask || mask->isNullValue() || mask->containsUndefOrPoisonElement() ||
        llvm::isa<llvm::ConstantExpr>(mask))
      return {};
    return {call->getArgOperand(ptrArg), sizeOf(accessed)};
  }

  // Per (q, block): the span [lo, hi) of the anchors at q + c. The accesses
  // of that block within it then share one confined q + lo and keep their
  // distance from it as their addressing mode's displacement (see confine).
  void findAnchors(const std::vector<llvm::Instruction *> &work) {
    for (llvm::Instruction *inst : work) {
      auto [p, size] = anchorPointer(*inst);
      if (!p || !p->getType()->isPointerTy() || p->getType()->getPointerAddressSpace() != 0)
        continue;
      llvm::APInt c(64, 0);
      llvm::Value *q = p->stripAndAccumulateConstantOffsets(dl_, c, true);
      // From tile_base the offsets are constants; the field-offset table is
      // not tile memory (its in-bounds loads are left alone, the others
      // confined one by one); stack objects and globals are clamped.
      if (q == base() || q == f_.getArg(1) || regionOf(p, false).object)
        continue;
      const int64_t lo = c.getSExtValue();
      int64_t hi = 0;
      if (__builtin_add_overflow(lo, int64_t(size), &hi)) // no valid access wraps
        continue;
      auto [it, added] = anchors_.try_emplace({q, inst->getParent()}, Anchor{lo, hi, nullptr});
      it->second.lo = std::min(it->second.lo, lo);
      it->second.hi = std::max(it->second.hi, hi);
    }
  }

  // Rewrites pointer (or vector of pointers) `p` into `region`, for accesses
  // of `size` bytes (`dynamicSize` when not constant; it is <= limitOf).
  llvm::Value *confine(llvm::Instruction &at, llvm::Value *p, const Region &region, uint64_t size,
                       llvm::Value *dynamicSize) {
    b_.SetInsertPoint(&at);
    llvm::Type *intTy = i64_;
    auto *vecTy = llvm::dyn_cast<llvm::VectorType>(p->getType());
    if (vecTy)
      intTy = llvm::VectorType::get(i64_, vecTy->getElementCount());
    auto splat = [&](llvm::Value *v) { return vecTy ? b_.CreateVectorSplat(vecTy->getElementCount(), v) : v; };
    llvm::Value *origin = region.object ? region.object : base();
    if (!vecTy && !region.object) {
      // p = q + c: one frozen (q - tile_base) per q serves every access
      // around it, and the constant folds into the clamp's addend.
      llvm::APInt c(64, 0);
      llvm::Value *q = p->stripAndAccumulateConstantOffsets(dl_, c, true);
      // In a block whose anchors from q span [lo, hi), valid code has all of
      // that span in the window, so confining q + lo for the whole span
      // leaves every access within it unchanged; any code lands in
      // [0, W - (hi - lo)) + (hi - lo) of the window.
      if (auto it = anchors_.find({q, at.getParent()}); it != anchors_.end() && !dynamicSize) {
        Anchor &a = it->second;
        const uint64_t span = uint64_t(a.hi) - uint64_t(a.lo);
        int64_t d = 0, end = 0;
        if (span <= minWindow_ && !__builtin_sub_overflow(c.getSExtValue(), a.lo, &d) && d >= 0 &&
            !__builtin_add_overflow(c.getSExtValue(), int64_t(size), &end) && end <= a.hi) {
          if (!a.confined) {
            llvm::Value *x = b_.CreateAdd(offsetFromBase(q), b_.getInt64(uint64_t(a.lo) + guard_));
            a.confined = b_.CreateGEP(b_.getInt8Ty(), origin, clampIntoWindow(x, roomFor(span, nullptr)), "sfi");
          }
          return d ? b_.CreateGEP(b_.getInt8Ty(), a.confined, b_.getInt64(d), "sfi") : a.confined;
        }
      }
      llvm::Value *x = b_.CreateAdd(offsetFromBase(q), b_.getInt64((c + guard_).getZExtValue()));
      return b_.CreateGEP(b_.getInt8Ty(), origin, clampIntoWindow(x, roomFor(size, dynamicSize)), "sfi");
    }
    llvm::Value *offset = b_.CreateSub(b_.CreatePtrToInt(p, intTy), splat(b_.CreatePtrToInt(origin, i64_)));
    // Poison or undef offsets become some fixed value, which is then confined.
    offset = b_.CreateFreeze(offset);
    if (region.object) {
      llvm::Value *room = dynamicSize ? b_.CreateSub(b_.getInt64(region.objectSize), dynamicSize)
                                      : b_.getInt64(region.objectSize - size);
      offset = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, offset, splat(room));
    } else {
      offset = clampIntoWindow(b_.CreateAdd(offset, splat(b_.getInt64(guard_))), splat(roomFor(size, dynamicSize)));
    }
    return b_.CreateGEP(b_.getInt8Ty(), origin, offset, "sfi");
  }

  // freeze(q - tile_base) as i64, computed once right after q is defined.
  llvm::Value *offsetFromBase(llvm::Value *q) {
    if (q == base())
      return b_.getInt64(0);
    auto it = offsets_.find(q);
    if (it != offsets_.end())
      return it->second;
    llvm::IRBuilder<> ib(f_.getContext());
    if (auto *def = llvm::dyn_cast<llvm::Instruction>(q)) {
      std::optional<llvm::BasicBlock::iterator> after = def->getInsertionPointAfterDef();
      if (!after)
        refuse("computes an address with an instruction that has no insertion point after it");
      ib.SetInsertPoint(def->getParent(), *after);
    } else {
      ib.SetInsertPoint(f_.getEntryBlock().getFirstInsertionPt());
    }
    llvm::Value *x = ib.CreateFreeze(ib.CreateSub(ib.CreatePtrToInt(q, i64_), ib.CreatePtrToInt(base(), i64_)));
    offsets_[q] = x;
    return x;
  }

  void confineOperand(llvm::Instruction &inst, unsigned op, uint64_t size, bool isStore, bool isLoad) {
    needEntry();
    llvm::Value *p = inst.getOperand(op);
    Region region = regionOf(p, isStore);
    if (size > limitOf(region))
      refuse(fmt::format("accesses {} bytes at once, more than its memory region allows", size));
    if (provablySafe(p, size, isLoad))
      return;
    inst.setOperand(op, confine(inst, p, region, size, nullptr));
  }

  // Vectors of pointers: each lane is confined (gather/scatter of `eltSize` bytes).
  void confineLanes(llvm::Instruction &inst, unsigned op, uint64_t eltSize, bool isStore) {
    needEntry();
    llvm::Value *p = inst.getOperand(op);
    Region region = regionOf(p, isStore);
    if (eltSize > limitOf(region))
      refuse("gathers or scatters elements larger than their memory region");
    inst.setOperand(op, confine(inst, p, region, eltSize, nullptr));
  }

  // memcpy/memmove/memset: pointers confined, length clamped so the whole
  // range stays inside every region it touches. A stack object or global
  // bounds it by its size; the tile by W, known only at run time, so a
  // length the tile's minWindow does not cover is clamped at run time.
  void confineMemIntrinsic(llvm::MemIntrinsic &mi) {
    needEntry();
    auto *transfer = llvm::dyn_cast<llvm::MemTransferInst>(&mi);
    Region dst = regionOf(mi.getRawDest(), true);
    std::optional<Region> src;
    if (transfer)
      src = regionOf(transfer->getRawSource(), false);
    const bool inTile = !dst.object || (src && !src->object);
    uint64_t limit = UINT64_MAX; // what the stack objects and globals allow
    if (dst.object)
      limit = dst.objectSize;
    if (src && src->object)
      limit = std::min(limit, src->objectSize);
    const bool inlined = llvm::isa<llvm::MemCpyInlineInst, llvm::MemSetInlineInst>(mi);
    llvm::Value *length = mi.getLength();
    if (auto *c = llvm::dyn_cast<llvm::ConstantInt>(length)) {
      if (c->getValue().ugt(limit) && inlined)
        refuse(fmt::format("copies or sets {} bytes inline, more than its memory region allows",
                           c->getValue().getZExtValue()));
      if (c->getValue().ugt(limit)) // no valid access is this long; clamp like dynamic lengths
        mi.setLength(llvm::ConstantInt::get(c->getType(), limit));
      const uint64_t size = std::min<uint64_t>(c->getValue().getLimitedValue(), limit);
      if (!inTile || size <= minWindow_) {
        mi.setDest(confine(mi, mi.getRawDest(), dst, size, nullptr));
        if (transfer)
          transfer->setSource(confine(mi, transfer->getRawSource(), *src, size, nullptr));
        return;
      }
      if (inlined)
        refuse(fmt::format("copies or sets {} bytes inline, more than the sandbox's {} bytes at once", size,
                           minWindow_));
      length = mi.getLength();
    }
    if (inlined)
      refuse("uses an inline memory intrinsic with a dynamic length"); // the verifier forbids this
    b_.SetInsertPoint(&mi);
    llvm::Value *clamped = b_.CreateZExtOrTrunc(length, i64_);
    if (limit != UINT64_MAX)
      clamped = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, clamped, b_.getInt64(limit));
    if (inTile)
      clamped = b_.CreateBinaryIntrinsic(llvm::Intrinsic::umin, clamped, window());
    mi.setDest(confine(mi, mi.getRawDest(), dst, 0, clamped));
    if (transfer)
      transfer->setSource(confine(mi, transfer->getRawSource(), *src, 0, clamped));
    b_.SetInsertPoint(&mi);
    mi.setLength(b_.CreateZExtOrTrunc(clamped, length->getType()));
  }

  void confineCall(llvm::CallBase &call) {
    namespace I = llvm::Intrinsic;
    llvm::Function *callee = call.getCalledFunction();
    if (!callee)
      refuse("makes an indirect call");
    if (!callee->isDeclaration())
      refuse(fmt::format("calls '{}', which was not inlined; vertex code may only call intrinsics and libm",
                         callee->getName().str()));
    if (!callee->isIntrinsic()) {
      for (llvm::Value *arg : call.args())
        if (containsPointer(arg->getType()))
          refuse(fmt::format("passes a pointer to '{}'", callee->getName().str()));
      if (containsPointer(call.getType()))
        refuse(fmt::format("receives a pointer from '{}'", callee->getName().str()));
      return;
    }
    llvm::Intrinsic::ID id = callee->getIntrinsicID();
    if (auto *mi = llvm::dyn_cast<llvm::MemIntrinsic>(&call)) {
      confineMemIntrinsic(*mi);
      return;
    }
    switch (id) {
    case I::masked_load:
    case I::masked_expandload:
      confineOperand(call, 0, sizeOf(call.getType()), false, false);
      return;
    case I::masked_store:
    case I::masked_compressstore:
      confineOperand(call, 1, sizeOf(call.getArgOperand(0)->getType()), true, false);
      return;
    case I::masked_gather:
      confineLanes(call, 0, sizeOf(call.getType()->getScalarType()), false);
      return;
    case I::masked_scatter:
      confineLanes(call, 1, sizeOf(call.getArgOperand(0)->getType()->getScalarType()), true);
      return;
    default:
      break;
    }
    if (isMarker(id))
      return;
    bool pointers = containsPointer(call.getType());
    for (llvm::Value *arg : call.args())
      pointers |= containsPointer(arg->getType());
    if (pointers || !call.doesNotAccessMemory())
      refuse(fmt::format("calls the intrinsic '{}', which the memory sandbox does not support",
                         callee->getName().str()));
  }

  llvm::Function &f_;
  const llvm::DataLayout &dl_;
  bool entry_;
  unsigned tableBytes_;
  uint64_t guard_;
  uint64_t minWindow_;
  uint64_t slotBelow_;
  llvm::Value *window_ = nullptr;
  const std::string &where_;
  llvm::IRBuilder<> b_;
  llvm::Type *i64_ = nullptr;
  llvm::DenseMap<llvm::Value *, llvm::Value *> offsets_;
  struct Anchor {
    int64_t lo, hi;        // the anchors' span from q: [lowest offset, highest offset + size)
    llvm::Value *confined; // q + lo confined, made at the block's first access from q
  };
  llvm::DenseMap<std::pair<llvm::Value *, llvm::BasicBlock *>, Anchor> anchors_;
};

} // namespace

void confineMemoryAccesses(llvm::Module &module, const MemorySandbox &sandbox, const std::string &where) {
  POPC_ASSERT(sandbox.minWindow > sandbox.guard && sandbox.limitSlotBelow >= sandbox.guard + 8);
  for (llvm::Function &f : module) {
    if (f.isDeclaration())
      continue;
    auto entry = sandbox.entryFieldCounts.find(f.getName().str());
    bool isEntry = entry != sandbox.entryFieldCounts.end();
    if (isEntry && (f.arg_size() != 2 || !f.getArg(0)->getType()->isPointerTy() ||
                    !f.getArg(1)->getType()->isPointerTy()))
      fail("{}: entry function '{}' must have type void(ptr, ptr)", where, f.getName().str());
    // Large frames (spills included) touch each page in turn, so they
    // fault on the thread's guard page instead of stepping over it.
    f.addFnAttr("probe-stack", "inline-asm");
    Confiner(f, isEntry, isEntry ? 4 * entry->second : 0, sandbox, where).run();
  }
}

} // namespace popc::runtime
