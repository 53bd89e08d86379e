// The bitcode gate: vertex code comes from a file, so before it is compiled
// and run in this process it must prove it can only compute. It may call
// allow-listed math/memory intrinsics and a few pure libm functions, nothing
// else: no inline asm, no external globals, no indirect calls.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace popc::runtime {

// Parses `bitcode` and runs checkModule. `where` prefixes every error, e.g.
// "model.popef: code module 0". Throws popc::Error.
std::unique_ptr<llvm::Module> loadCodeModule(llvm::LLVMContext &context,
                                             std::span<const uint8_t> bitcode,
                                             const std::string &where,
                                             const std::vector<std::string> &entrySymbols);

// Checks an already parsed module (see above). Every entry symbol must be a
// defined, externally visible function of type void(ptr, ptr).
void checkModule(const llvm::Module &module, const std::string &where,
                 const std::vector<std::string> &entrySymbols);

// Names of the non-intrinsic functions vertex code may call (pure libm).
const std::vector<std::string> &allowedLibmFunctions();

} // namespace popc::runtime
