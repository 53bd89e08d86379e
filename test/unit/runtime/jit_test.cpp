// The JIT splits a module into partitions compiled on pool threads; every
// entry must still compute the same, whatever the thread count, including
// entries that share a helper function, a mutable global or a constant table.
#include "runtime/bitcode_gate.h"
#include "test/unit/runtime/vertex_ir.h"
#include "runtime/engine.h"
#include "runtime/jit.h"
#include "runtime/thread_pool.h"
#include "test/unit/popef/sample_executable.h"

#include <catch2/catch.hpp>

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <cstring>

using popc::runtime::Jit;
using popc::runtime::ThreadPool;
using popc::runtime::VertexFn;

namespace {

constexpr unsigned kEntries = 16;

std::string entryName(unsigned k) { return "add_f32_2_v" + std::to_string(k); }

// Entry k: out[i] = in0[i] + in1[i] + bias_k for 2 floats, fields at
// tile_base + offsets[0..2]. bias_k is k, except: entries 0 and 1 call an
// internal helper (k + 100); entry 2 counts its calls in an internal global
// that entry 3 adds instead of k; entries 4..7 read k * 10 from a private
// constant table; entry 8 calls an unnamed internal function (k + 1000).
std::unique_ptr<llvm::Module> makeModule(llvm::LLVMContext &ctx) {
  auto m = std::make_unique<llvm::Module>("vertices", ctx);
  llvm::IRBuilder<> b(ctx);
  auto *ptr = b.getPtrTy();
  auto *f32 = b.getFloatTy();
  auto *unary = llvm::FunctionType::get(f32, {f32}, false);

  auto addConstant = [&](const char *name, float c) {
    auto *f = llvm::Function::Create(unary, llvm::Function::InternalLinkage, name, *m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    b.CreateRet(b.CreateFAdd(f->getArg(0), llvm::ConstantFP::get(f32, c)));
    return f;
  };
  llvm::Function *helper = addConstant("plus100", 100);
  llvm::Function *unnamed = addConstant("", 1000);
  auto *calls = new llvm::GlobalVariable(*m, b.getInt32Ty(), false, llvm::GlobalValue::InternalLinkage,
                                         b.getInt32(0), "calls");
  std::vector<llvm::Constant *> values;
  for (unsigned k = 0; k < kEntries; ++k)
    values.push_back(llvm::ConstantFP::get(f32, 10.0f * k));
  auto *tableTy = llvm::ArrayType::get(f32, kEntries);
  auto *table = new llvm::GlobalVariable(*m, tableTy, true, llvm::GlobalValue::PrivateLinkage,
                                         llvm::ConstantArray::get(tableTy, values), "table");
  table->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);

  for (unsigned k = 0; k < kEntries; ++k) {
    auto *f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false),
                                     llvm::Function::ExternalLinkage, entryName(k), *m);
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
    llvm::Value *base = f->getArg(0), *offsets = f->getArg(1);
    auto field = [&](unsigned i) { return popc::test::fieldPointer(b, base, offsets, i); };
    llvm::Value *in0 = field(0), *in1 = field(1), *out = field(2);
    llvm::Value *bias = llvm::ConstantFP::get(f32, float(k));
    if (k <= 1)
      bias = b.CreateCall(helper, {bias});
    if (k == 2)
      b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt32Ty(), calls), b.getInt32(1)), calls);
    if (k == 3)
      bias = b.CreateUIToFP(b.CreateLoad(b.getInt32Ty(), calls), f32);
    if (k >= 4 && k <= 7)
      bias = b.CreateLoad(f32, b.CreateConstGEP2_32(tableTy, table, 0, k));
    if (k == 8)
      bias = b.CreateCall(unnamed, {bias});
    for (unsigned i = 0; i < 2; ++i) {
      llvm::Value *x = b.CreateLoad(f32, b.CreateConstGEP1_32(f32, in0, i));
      llvm::Value *y = b.CreateLoad(f32, b.CreateConstGEP1_32(f32, in1, i));
      b.CreateStore(b.CreateFAdd(b.CreateFAdd(x, y), bias), b.CreateConstGEP1_32(f32, out, i));
    }
    b.CreateRetVoid();
  }
  return m;
}

std::vector<std::string> entryNames() {
  std::vector<std::string> names;
  for (unsigned k = 0; k < kEntries; ++k)
    names.push_back(entryName(k));
  return names;
}

float expectedBias(unsigned k, unsigned entry2Calls) {
  if (k <= 1)
    return k + 100.0f;
  if (k == 3)
    return float(entry2Calls);
  if (k >= 4 && k <= 7)
    return 10.0f * k;
  if (k == 8)
    return k + 1000.0f;
  return float(k);
}

std::vector<uint8_t> bitcodeOf(const llvm::Module &m) {
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::WriteBitcodeToFile(m, os);
  os.flush();
  return {bytes.begin(), bytes.end()};
}

} // namespace

TEST_CASE("JIT compiles a multi-entry module in partitions on several threads", "[runtime][jit]") {
  for (unsigned threads : {1u, 2u, 4u}) {
    CAPTURE(threads);
    ThreadPool pool(threads);
    Jit jit(&pool);
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = makeModule(*context);
    popc::runtime::checkModule(*module, "test", entryNames()); // the gate accepts it
    jit.addModule(std::move(module), std::move(context), "test");
    // Components: {0, 1, plus100}, {2, 3, calls}, and 12 single entries (the
    // table is copied into each partition that reads it).
    CHECK(jit.lastPartitions() == (threads == 1 ? 1 : std::min<size_t>(14, 4 * threads)));

    std::vector<VertexFn> fns;
    for (unsigned k = 0; k < kEntries; ++k)
      fns.push_back(jit.lookup(entryName(k), "test"));
    alignas(16) uint8_t tile[64] = {};
    float in0[2] = {1.5f, -2}, in1[2] = {0.25f, 8};
    std::memcpy(tile, in0, 8);
    std::memcpy(tile + 16, in1, 8);
    const uint32_t offsets[3] = {0, 16, 32};
    fns[2](tile, offsets); // the loop calls it a second time before entry 3 reads the count
    for (unsigned k = 0; k < kEntries; ++k) {
      CAPTURE(k);
      fns[k](tile, offsets);
      float out[2];
      std::memcpy(out, tile + 32, 8);
      CHECK(out[0] == 1.75f + expectedBias(k, 2));
      CHECK(out[1] == 6.0f + expectedBias(k, 2));
    }
  }
}

TEST_CASE("JIT without a pool compiles on the calling thread", "[runtime][jit]") {
  Jit jit;
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = makeModule(*context);
  jit.addModule(std::move(module), std::move(context), "test");
  CHECK(jit.lastPartitions() == 1);
  alignas(16) uint8_t tile[64] = {};
  const uint32_t offsets[3] = {0, 16, 32};
  jit.lookup(entryName(9), "test")(tile, offsets);
  float out[2];
  std::memcpy(out, tile + 32, 8);
  CHECK(out[0] == 9.0f);
  CHECK(out[1] == 9.0f);
}

TEST_CASE("engine runs an executable with many vertex types on several threads", "[runtime][jit]") {
  llvm::LLVMContext ctx;
  auto exe = popc::test::makeSampleExecutable(bitcodeOf(*makeModule(ctx)), entryName(5));
  // Every entry is a vertex type (all are looked up); tile 1 uses another one.
  for (unsigned k = 0; k < kEntries; ++k) {
    if (k == 5)
      continue;
    auto vt = std::make_unique<popef::fb::VertexTypeT>(*exe.vertex_types[0]);
    vt->name = "Add_2_f32_v" + std::to_string(k);
    vt->symbol = entryName(k);
    exe.vertex_types.push_back(std::move(vt));
  }
  // vertex 1 (tile 1) uses type index 10 = entry 10 (types: 5, 0..4, 6..15)
  exe.compute_sets[0]->vertices[1] = {10, 1, 3};
  auto bytes = popc::popef::serialize(exe);
  for (unsigned threads : {1u, 2u, 4u}) {
    CAPTURE(threads);
    popc::runtime::Engine engine(popc::popef::Executable::fromBytes(bytes, "many.popef"), {threads, nullptr});
    popc::runtime::HostTensor a{popc::DType::F32, {4}, std::vector<uint8_t>(16)};
    float v[4] = {1, 2, 3, 4};
    std::memcpy(a.data.data(), v, 16);
    auto out = engine.run({{"a", a}})["out"];
    std::vector<float> got(4);
    std::memcpy(got.data(), out.data.data(), 16);
    // b = {10, 20, 30, 40}; tile 0 adds 50 (entry 5 reads table[5]), tile 1 adds 10.
    CHECK(got == std::vector<float>{61, 72, 43, 54});
  }
}
