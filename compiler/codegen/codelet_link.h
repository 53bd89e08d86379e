// Internal to compiler/codegen: resolves the codelet calls of a vertex module
// against the built-in codelet library (compiler/codelets).
#pragma once

namespace llvm {
class Module;
} // namespace llvm

namespace popc::codegen::detail {

// Links the library functions `m` calls into `m`, internal and always-inline
// (the runtime only accepts helpers it can inline into vertex entries), with
// the library's host-specific attributes stripped so the bitcode stays portable.
// Throws popc::Error for a call to a function the library lacks.
void linkCodelets(llvm::Module &m);

} // namespace popc::codegen::detail
