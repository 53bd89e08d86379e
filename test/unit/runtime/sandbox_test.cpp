// The memory sandbox: vertex code that computes addresses outside its tile
// (far above, below, the next tile, past its field-offset table) must end up
// in its own tile's slot, never in another tile or host memory.
#include "runtime/device_memory.h"
#include "test/unit/runtime/vertex_ir.h"
#include "runtime/engine.h"
#include "runtime/jit.h"
#include "runtime/memory_sandbox.h"
#include "support/error.h"
#include "test/unit/popef/sample_executable.h"

#include <catch2/catch.hpp>

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <cstring>
#include <functional>
#include <vector>

using popc::runtime::Jit;
namespace fb = ::popef::fb;

namespace {

constexpr int64_t kMiB = 1 << 20;

using Body = std::function<void(llvm::IRBuilder<> &, llvm::Module &, llvm::Value *base, llvm::Value *offsets)>;

// void symbol(ptr base, ptr offsets) { add_f32_2 on fields 0..2; body }
std::unique_ptr<llvm::Module> makeModule(llvm::LLVMContext &ctx, const Body &body,
                                         const std::string &symbol = "add_f32_2") {
  auto m = std::make_unique<llvm::Module>("vertices", ctx);
  llvm::IRBuilder<> b(ctx);
  auto *ptr = b.getPtrTy();
  auto *f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false),
                                   llvm::Function::ExternalLinkage, symbol, *m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value *base = f->getArg(0), *offsets = f->getArg(1);
  auto field = [&](unsigned i) { return popc::test::fieldPointer(b, base, offsets, i); };
  llvm::Value *in0 = field(0), *in1 = field(1), *out = field(2);
  for (unsigned i = 0; i < 2; ++i) {
    llvm::Value *x = b.CreateLoad(b.getFloatTy(), b.CreateConstGEP1_32(b.getFloatTy(), in0, i));
    llvm::Value *y = b.CreateLoad(b.getFloatTy(), b.CreateConstGEP1_32(b.getFloatTy(), in1, i));
    b.CreateStore(b.CreateFAdd(x, y), b.CreateConstGEP1_32(b.getFloatTy(), out, i));
  }
  body(b, *m, base, offsets);
  b.CreateRetVoid();
  return m;
}

llvm::Value *at(llvm::IRBuilder<> &b, llvm::Value *p, int64_t offset) {
  return b.CreateGEP(b.getInt8Ty(), p, b.getInt64(offset));
}

// An address the optimiser cannot see: base + offset computed through
// integers (as a crafted file would).
llvm::Value *forged(llvm::IRBuilder<> &b, llvm::Value *base, int64_t offset) {
  return b.CreateIntToPtr(b.CreateAdd(b.CreatePtrToInt(base, b.getInt64Ty()), b.getInt64(offset)), b.getPtrTy());
}

// Stores 999.0f far above, below and into the next tiles, and memsets the
// next tile, all from tile_base.
void rogueWrites(llvm::IRBuilder<> &b, llvm::Module &, llvm::Value *base, llvm::Value *, uint64_t stride) {
  llvm::Value *v = llvm::ConstantFP::get(b.getFloatTy(), 999.0);
  for (int64_t off : {100 * kMiB + 512, int64_t(-4096 + 600), int64_t(stride) + 16, int64_t(stride) + 4,
                      3 * int64_t(stride) + 8, -int64_t(stride) + 20})
    b.CreateStore(v, at(b, base, off));
  b.CreateStore(v, forged(b, base, int64_t(stride) + 20));
  b.CreateMemSet(at(b, base, int64_t(stride) + 256), b.getInt8(0x7f), b.getInt64(64), llvm::MaybeAlign(4));
  b.CreateMemSet(forged(b, base, 64 * kMiB + 512), b.getInt8(0x7f), b.getInt64(1 << 30), llvm::MaybeAlign(4));
}

std::vector<uint8_t> bitcodeOf(const llvm::Module &m) {
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::WriteBitcodeToFile(m, os);
  os.flush();
  return {bytes.begin(), bytes.end()};
}

std::vector<float> floats(const popc::runtime::HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

} // namespace

TEST_CASE("tiles are packed in windows of their own, their limits outside every window", "[runtime][sandbox]") {
  using popc::runtime::DeviceMemory;
  const std::vector<uint32_t> bytes = {1000, 0, 5000, 70000, 3, 624 * 1024};
  DeviceMemory memory(bytes);
  const uint64_t guard = DeviceMemory::kGuardBytes;
  const uintptr_t arenaBegin = reinterpret_cast<uintptr_t>(memory.tile(0)) - DeviceMemory::kLimitSlotBelow;
  uint64_t windows = 0;
  for (uint32_t t = 0; t < bytes.size(); ++t) {
    CAPTURE(t);
    const uint64_t w = memory.windowBytes(t);
    windows += w;
    CHECK(w >= guard + bytes[t] + DeviceMemory::kSlackBytes);
    CHECK(w >= DeviceMemory::kMinWindowBytes);
    CHECK(reinterpret_cast<uintptr_t>(memory.tile(t)) % DeviceMemory::kTileAlign == 0);
    const uintptr_t lo = reinterpret_cast<uintptr_t>(memory.tile(t)) - guard, hi = lo + w;
    CHECK(lo >= arenaBegin);
    CHECK(hi <= reinterpret_cast<uintptr_t>(memory.end()));
    for (uint32_t u = 0; u < bytes.size(); ++u) {
      const uintptr_t b = reinterpret_cast<uintptr_t>(memory.tile(u));
      const uintptr_t slot = b - DeviceMemory::kLimitSlotBelow;
      CHECK((slot + 8 <= lo || slot >= hi)); // no vertex can write a limit
      if (u != t)
        CHECK((b + bytes[u] <= lo || b >= hi)); // nor another tile's memory
    }
  }
  // Packed: the windows and a line per limit slot, rounded to a huge page.
  CHECK(uint64_t(reinterpret_cast<uintptr_t>(memory.end()) - arenaBegin) <=
        windows + bytes.size() * DeviceMemory::kTileAlign + (2u << 20));
}

TEST_CASE("a vertex writing outside its tile does not touch other tiles", "[runtime][sandbox]") {
  llvm::LLVMContext ctx;
  auto plain = makeModule(ctx, [](auto &, auto &, auto *, auto *) {});
  auto exe = popc::test::makeSampleExecutable(bitcodeOf(*plain));
  // The rogue writes aim at the next tiles, as the runner lays them out.
  std::vector<uint32_t> tileBytes;
  {
    const auto sample = popc::popef::serialize(exe);
    const auto *root = fb::GetExecutable(sample.data());
    for (uint32_t t = 0; t < root->target()->num_ipus() * root->target()->tiles_per_ipu(); ++t)
      tileBytes.push_back(popc::popef::tileMemoryBytes(*root, t));
  }
  const popc::runtime::DeviceMemory layout(tileBytes);
  const uint64_t stride = uint64_t(layout.tile(1) - layout.tile(0));
  // Tile 0 runs the rogue vertex type; tile 1 the plain one.
  auto rogue = makeModule(ctx, [&](auto &b, auto &m, auto *base, auto *offsets) {
    rogueWrites(b, m, base, offsets, stride);
  }, "rogue");
  auto code = std::make_unique<fb::CodeModuleT>();
  code->bitcode = bitcodeOf(*rogue);
  exe.code.push_back(std::move(code));
  auto vt = std::make_unique<fb::VertexTypeT>(*exe.vertex_types[0]);
  vt->symbol = "rogue";
  vt->module_ = 1;
  exe.vertex_types.push_back(std::move(vt));
  exe.compute_sets[0]->vertices[0] = {1, 0, 0};
  auto bytes = popc::popef::serialize(exe);
  for (unsigned threads : {1u, 2u}) {
    CAPTURE(threads);
    popc::runtime::Engine engine(popc::popef::Executable::fromBytes(bytes, "rogue.popef"), {threads, nullptr});
    popc::runtime::HostTensor a{popc::DType::F32, {4}, std::vector<uint8_t>(16)};
    float v[4] = {1, 2, 3, 4};
    std::memcpy(a.data.data(), v, 16);
    for (int run = 0; run < 3; ++run) {
      CAPTURE(run);
      std::vector<float> out = floats(engine.run({{"a", a}})["out"]);
      // Tile 1's half (a + constant b) is intact on every run: its b was
      // never overwritten. (Tile 0's memset of 1 GiB, clamped to its whole
      // window, wipes its own result.)
      CHECK(out[2] == 33);
      CHECK(out[3] == 44);
    }
  }
}

// Entry "add_f32_2" (the add, then `body`) confined to a window of `window`
// bytes (guard 256, at least kMinWindow) in a larger buffer that is filled
// with 0xab, its size in the slot below it: the tile holds in0 = {1.5, -2}
// at 0 and in1 = {0.25, 8} at 16, field 2 is at 32, and the field table has
// a fourth word, 0xdeadbeef, past its three.
struct WindowRun {
  static constexpr uint64_t kWindow = 2048, kGuard = 256, kMinWindow = 1024, kSlotBelow = kGuard + 8;
  uint64_t window;
  std::vector<uint32_t> memory;
  uint8_t *start, *tile;
  alignas(16) uint32_t offsets[4] = {0, 16, 32, 0xdeadbeef};

  // `fillWindow(word index)` gives each window word its value before the run.
  WindowRun(const Body &body, const std::function<uint32_t(uint32_t)> &fillWindow, uint64_t windowBytes = kWindow)
      : window(windowBytes), memory(3 * windowBytes / 4, 0xabababab),
        start(reinterpret_cast<uint8_t *>(memory.data()) + windowBytes), tile(start + kGuard) {
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = makeModule(*context, body);
    Jit jit;
    popc::runtime::MemorySandbox sandbox{{{"add_f32_2", 3}}, kGuard, kMinWindow, kSlotBelow};
    jit.addModule(std::move(module), std::move(context), "test", &sandbox);
    auto fn = jit.lookup("add_f32_2", "test");
    for (uint32_t w = 0; w < window / 4; ++w) {
      const uint32_t v = fillWindow(w);
      std::memcpy(start + 4 * w, &v, 4);
    }
    std::memcpy(tile - kSlotBelow, &window, 8);
    const float in0[2] = {1.5f, -2}, in1[2] = {0.25f, 8};
    std::memcpy(tile, in0, 8);
    std::memcpy(tile + 16, in1, 8);
    fn(tile, offsets);
  }
  float out(size_t i) const {
    float v;
    std::memcpy(&v, tile + 32 + 4 * i, 4);
    return v;
  }
  // Every word outside the window but the limit slot still holds the fill.
  bool outsideIntact() const {
    const size_t first = window / 4, last = 2 * window / 4, slot = (window - (kSlotBelow - kGuard)) / 4;
    for (size_t i = 0; i < memory.size(); ++i)
      if ((i < first || i >= last) && i != slot && i != slot + 1 && memory[i] != 0xabababab)
        return false;
    return true;
  }
};

TEST_CASE("the sandbox keeps accesses inside the tile's window", "[runtime][sandbox]") {
  constexpr uint64_t kGuard = WindowRun::kGuard;
  // The window's size is read at run time: the same code in a small window
  // and in one four times larger.
  for (uint64_t window : {WindowRun::kWindow, 4 * WindowRun::kWindow}) {
    CAPTURE(window);
    // Entry: the add, the rogue writes, and a load past the 3-entry field
    // table (offsets[3]) stored to tile_base + 40. Window words hold their index.
    WindowRun r(
        [&](auto &b, auto &m, auto *base, auto *offsets) {
          rogueWrites(b, m, base, offsets, window);
          llvm::Value *beyond = b.CreateLoad(b.getInt32Ty(), b.CreateConstGEP1_32(b.getInt32Ty(), offsets, 3));
          b.CreateStore(beyond, at(b, base, 40));
        },
        [](uint32_t w) { return w; }, window);
    CHECK(r.outsideIntact()); // (the memset of 1 GiB, clamped to the window, wipes the add's result)
    // The load past the table came from the tile, not from offsets[3].
    uint32_t beyond;
    std::memcpy(&beyond, r.tile + 40, 4);
    CHECK(beyond != 0xdeadbeef);
    const uint64_t x = reinterpret_cast<uintptr_t>(r.offsets + 3) - reinterpret_cast<uintptr_t>(r.tile) + kGuard;
    const int64_t redirected = int64_t(std::min<uint64_t>(x, window - 4)) - int64_t(kGuard);
    CHECK(redirected % 4 == 0);
    if (redirected != 40) { // nothing but the store to +40 writes after the load
      uint32_t word;
      std::memcpy(&word, r.tile + redirected, 4);
      CHECK(beyond == word);
    }
  }
}

TEST_CASE("valid accesses longer than the smallest window are left whole", "[runtime][sandbox]") {
  // A memset of 1,200 bytes (more than kMinWindow, within the window) from a
  // field, and stores 1,500 bytes apart from one pointer: all where valid
  // code put them.
  WindowRun r([](auto &b, auto &, auto *base, auto *offsets) {
    llvm::Value *out = popc::test::fieldPointer(b, base, offsets, 2);
    b.CreateMemSet(at(b, out, 32), b.getInt8(0x11), b.getInt64(1200), llvm::MaybeAlign(4));
    b.CreateStore(b.getInt32(0x22222222), at(b, out, 8));
    b.CreateStore(b.getInt32(0x33333333), at(b, out, 1508));
  }, [](uint32_t) { return 0u; });
  CHECK(r.outsideIntact());
  for (uint32_t i = 0; i < 1200; ++i)
    CHECK(r.tile[64 + i] == 0x11);
  CHECK(r.tile[40] == 0x22);
  CHECK(r.tile[32 + 1508] == 0x33);
  CHECK(r.out(0) == 1.75f);
}

TEST_CASE("accesses from one base in a block are confined together", "[runtime][sandbox]") {
  // A forged base far outside the tile with accesses at several constant
  // offsets: those within the smallest window of the lowest share its confined
  // address, the others are confined alone; none leaves the window.
  WindowRun r([](auto &b, auto &, auto *base, auto *) {
    llvm::Value *q = forged(b, base, 100 * kMiB + 512);
    llvm::Value *v = llvm::ConstantFP::get(b.getFloatTy(), 999.0);
    for (int64_t off : {int64_t(0), int64_t(8), int64_t(1024 - 4), int64_t(1024 + 512), int64_t(-64), int64_t(-5000)})
      b.CreateStore(v, at(b, q, off));
    b.CreateMemSet(at(b, q, 16), b.getInt8(0x7f), b.getInt64(1000), llvm::MaybeAlign(4));
  }, [](uint32_t) { return 0u; });
  CHECK(r.outsideIntact());
}

TEST_CASE("a masked access with a run-time mask anchors no group", "[runtime][sandbox]") {
  // Valid code may point a masked load with every lane off anywhere (a kernel
  // row in the padding): here 512 bytes below field 0. Were it the anchor of
  // field 0's accesses, they would move with it and the sum would be wrong.
  WindowRun r([](auto &b, auto &, auto *base, auto *offsets) {
    llvm::Value *in0 = popc::test::fieldPointer(b, base, offsets, 0);
    llvm::Value *out = popc::test::fieldPointer(b, base, offsets, 2);
    // false at run time (offsets[0] is 0), unknown to the optimiser
    llvm::Value *off0 = b.CreateLoad(b.getInt32Ty(), offsets);
    llvm::Value *on = b.CreateICmpEQ(off0, b.getInt32(12345));
    auto *vt = llvm::FixedVectorType::get(b.getFloatTy(), 4);
    llvm::Value *lanes = b.CreateMaskedLoad(vt, at(b, in0, -512), llvm::Align(4), b.CreateVectorSplat(4, on),
                                            llvm::Constant::getNullValue(vt));
    llvm::Value *x = b.CreateLoad(b.getFloatTy(), in0);
    b.CreateStore(b.CreateFAdd(x, b.CreateExtractElement(lanes, uint64_t(0))), at(b, out, 8));
  }, [](uint32_t) { return 0u; });
  CHECK(r.out(0) == 1.75f);
  CHECK(r.out(1) == 6.0f);
  CHECK(r.out(2) == 1.5f); // in0[0] + 0 (no lane read)
  CHECK(r.outsideIntact());
}

TEST_CASE("the sandbox refuses what it cannot confine", "[runtime][sandbox]") {
  auto error = [](const Body &body) -> std::string {
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = makeModule(*context, body);
    Jit jit;
    popc::runtime::MemorySandbox sandbox{{{"add_f32_2", 3}}, 256, 1024, 264};
    try {
      jit.addModule(std::move(module), std::move(context), "m.popef: code module 0", &sandbox);
    } catch (const popc::Error &e) {
      return e.what();
    }
    return "accepted";
  };
  CHECK_THAT(error([](auto &b, auto &, auto *base, auto *) {
               b.CreateAtomicRMW(llvm::AtomicRMWInst::Add, base, b.getInt32(1), llvm::MaybeAlign(4),
                                 llvm::AtomicOrdering::SequentiallyConsistent);
             }),
             Catch::StartsWith("m.popef: code module 0: function 'add_f32_2' uses atomic memory operations"));
  CHECK_THAT(error([](auto &b, auto &m, auto *base, auto *) {
               // A helper that is not inlined and writes memory.
               auto *h = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false),
                                                llvm::Function::InternalLinkage, "helper", m);
               h->addFnAttr(llvm::Attribute::NoInline);
               llvm::IRBuilder<> hb(llvm::BasicBlock::Create(m.getContext(), "entry", h));
               hb.CreateStore(hb.getInt32(7), hb.CreateGEP(hb.getInt8Ty(), h->getArg(0), hb.getInt64(1 << 30)));
               hb.CreateRetVoid();
               b.CreateCall(h, {base});
             }),
             Catch::Contains("m.popef: code module 0: function '"));
  CHECK_THAT(error([](auto &b, auto &, auto *base, auto *) {
               b.CreateStore(b.getInt32(1), b.CreateGEP(b.getInt8Ty(), base, b.getInt64(4)), false);
               b.CreateStore(b.getInt32(1),
                             b.CreateAddrSpaceCast(at(b, base, 8), llvm::PointerType::get(b.getContext(), 256)));
             }),
             Catch::Contains("non-default address space"));
}

TEST_CASE("integer division by zero or INT_MIN / -1 cannot trap", "[runtime][sandbox]") {
  llvm::LLVMContext ctx;
  // out[0] = in0[1] sdiv in0[0], out[1] = in0[1] srem in0[0] (as i32 bits).
  auto divider = makeModule(ctx, [](auto &b, auto &, auto *base, auto *offsets) {
    llvm::Value *in0 = popc::test::fieldPointer(b, base, offsets, 0);
    llvm::Value *out = popc::test::fieldPointer(b, base, offsets, 2);
    llvm::Value *d = b.CreateLoad(b.getInt32Ty(), in0);
    llvm::Value *x = b.CreateLoad(b.getInt32Ty(), b.CreateConstGEP1_32(b.getInt32Ty(), in0, 1));
    b.CreateStore(b.CreateSDiv(x, d), out);
    b.CreateStore(b.CreateSRem(x, d), b.CreateConstGEP1_32(b.getInt32Ty(), out, 1));
  });
  auto bytes = popc::popef::serialize(popc::test::makeSampleExecutable(bitcodeOf(*divider)));
  popc::runtime::Engine engine(popc::popef::Executable::fromBytes(bytes, "div.popef"), {1, nullptr});
  auto run = [&](int32_t d, int32_t x) {
    popc::runtime::HostTensor a{popc::DType::F32, {4}, std::vector<uint8_t>(16)};
    const int32_t v[4] = {d, x, 0, 0};
    std::memcpy(a.data.data(), v, 16);
    popc::runtime::HostTensor out = engine.run({{"a", a}})["out"];
    int32_t r[2];
    std::memcpy(r, out.data.data(), 8);
    return std::make_pair(r[0], r[1]);
  };
  CHECK(run(3, 7) == std::make_pair(2, 1));   // ordinary division is unchanged
  CHECK(run(-1, 7) == std::make_pair(-7, 0)); // x / -1 keeps its meaning
  CHECK(run(-1, INT32_MIN) == std::make_pair(INT32_MIN, 0)); // would trap on x86
  CHECK_NOTHROW(run(0, 7));                   // would trap on x86; any result is acceptable
}
