// The optimisation every vertex module gets before it goes into a popef,
// generated (compiler/codegen) or user-written (api/ codelets) alike.
#pragma once

namespace llvm {
class Module;
} // namespace llvm

namespace popc::codegen {

// Target-independent O2: no TargetMachine, loop vectorisation and unrolling
// left to the runtime, which re-optimises for the host CPU at JIT time. The
// library-call info is emptied so the optimiser introduces no libm/libc calls
// beyond those the code already makes (the runtime allows only a short list).
void optimisePortable(llvm::Module &m);

} // namespace popc::codegen
