// Test helper: the vertex ABI in IRBuilder terms, for hand-built vertex code.
#pragma once
#include <llvm/IR/IRBuilder.h>

namespace popc::test {

// Pointer to field `i`: tile_base + zext(field_offsets[i]) (the vertex ABI).
inline llvm::Value *fieldPointer(llvm::IRBuilder<> &b, llvm::Value *tileBase, llvm::Value *fieldOffsets, unsigned i) {
  llvm::Value *off = b.CreateLoad(b.getInt32Ty(), b.CreateConstGEP1_32(b.getInt32Ty(), fieldOffsets, i));
  return b.CreateGEP(b.getInt8Ty(), tileBase, b.CreateZExt(off, b.getInt64Ty()));
}

} // namespace popc::test
