// Test helper: the vertex ABI in IRBuilder terms, for hand-built vertex code.
#pragma once
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <string>
#include <vector>

namespace popc::test {

// Pointer to field `i`: tile_base + zext(field_offsets[i]) (the vertex ABI).
inline llvm::Value *fieldPointer(llvm::IRBuilder<> &b, llvm::Value *tileBase, llvm::Value *fieldOffsets, unsigned i) {
  llvm::Value *off = b.CreateLoad(b.getInt32Ty(), b.CreateConstGEP1_32(b.getInt32Ty(), fieldOffsets, i));
  return b.CreateGEP(b.getInt8Ty(), tileBase, b.CreateZExt(off, b.getInt64Ty()));
}

// Bitcode of the sample executable's vertex "add_f32_2" (test/unit/popef/
// sample_executable.h): out[i] = in0[i] + in1[i] for 2 floats.
inline std::vector<uint8_t> sampleAddBitcode() {
  llvm::LLVMContext ctx;
  llvm::Module m("vertices", ctx);
  llvm::IRBuilder<> b(ctx);
  auto *ptr = b.getPtrTy();
  auto *f = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false),
                                   llvm::Function::ExternalLinkage, "add_f32_2", m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  auto field = [&](unsigned i) { return fieldPointer(b, f->getArg(0), f->getArg(1), i); };
  llvm::Value *in0 = field(0), *in1 = field(1), *out = field(2);
  for (unsigned i = 0; i < 2; ++i) {
    llvm::Value *x = b.CreateLoad(b.getFloatTy(), b.CreateConstGEP1_32(b.getFloatTy(), in0, i));
    llvm::Value *y = b.CreateLoad(b.getFloatTy(), b.CreateConstGEP1_32(b.getFloatTy(), in1, i));
    b.CreateStore(b.CreateFAdd(x, y), b.CreateConstGEP1_32(b.getFloatTy(), out, i));
  }
  b.CreateRetVoid();
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::WriteBitcodeToFile(m, os);
  os.flush();
  return {bytes.begin(), bytes.end()};
}

} // namespace popc::test
