#include "compiler/codegen/codelet_link.h"

#include "compiler/codelets/library.h"
#include "support/error.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/Module.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>

namespace popc::codegen::detail {

namespace {
bool isCodelet(const llvm::Function &f) { return f.getName().starts_with("popc_"); }
} // namespace

void linkCodelets(llvm::Module &m) {
  bool needed = false;
  for (const llvm::Function &f : m)
    needed |= isCodelet(f) && f.isDeclaration();
  if (!needed)
    return;

  const auto bytes = codelets::libraryBitcode();
  auto buffer = llvm::MemoryBuffer::getMemBuffer(
      llvm::StringRef(reinterpret_cast<const char *>(bytes.data()), bytes.size()), "popc_codelets", false);
  auto parsed = llvm::parseBitcodeFile(buffer->getMemBufferRef(), m.getContext());
  if (!parsed)
    fail("codegen: internal error: the built-in codelet library does not parse: {}",
         llvm::toString(parsed.takeError()));
  std::unique_ptr<llvm::Module> library = std::move(*parsed);
  // Same portability rules as generated code: no triple, no layout, no CPU.
  library->setTargetTriple(m.getTargetTriple());
  library->setDataLayout(m.getDataLayout());
  for (llvm::Function &f : *library)
    for (const char *attr : {"target-cpu", "target-features", "tune-cpu"})
      f.removeFnAttr(attr);
  if (auto *ident = library->getNamedMetadata("llvm.ident"))
    library->eraseNamedMetadata(ident);
  if (llvm::Linker::linkModules(m, std::move(library), llvm::Linker::LinkOnlyNeeded))
    fail("codegen: internal error: linking the codelet library failed");

  for (llvm::Function &f : m) {
    if (!isCodelet(f))
      continue;
    if (f.isDeclaration())
      fail("codegen: internal error: codelet '{}' is not in the built-in library", f.getName().str());
    f.setLinkage(llvm::GlobalValue::InternalLinkage);
    f.removeFnAttr(llvm::Attribute::NoInline);
    f.removeFnAttr(llvm::Attribute::OptimizeNone);
    f.addFnAttr(llvm::Attribute::AlwaysInline);
  }
}

} // namespace popc::codegen::detail
