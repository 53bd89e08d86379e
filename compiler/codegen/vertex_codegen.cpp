// VertexCodegen: dedups specs by key, emits one function per distinct spec
// into one module, and turns the module into portable, deterministic bitcode.
#include "compiler/codegen/codelet_link.h"
#include "compiler/codegen/emitter.h"
#include "compiler/codegen/kernels.h"
#include "compiler/codegen/kinds.h"
#include "compiler/codegen/portable_optimise.h"
#include "support/error.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Analysis/TargetLibraryInfo.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <fmt/format.h>

#include <map>
#include <set>

namespace popc::codegen {

using namespace detail;

std::string kernelKey(const KernelSpec &spec) {
  return std::visit([](const auto &s) { return key(s); }, spec);
}

struct VertexCodegen::Impl {
  llvm::LLVMContext context;
  // No target triple and no data layout: the bitcode must stay portable. The
  // runtime (like LLJIT) adopts the host's triple and layout when it JITs a
  // module with the default layout; a fixed layout would have to match the
  // host's exactly or LLJIT rejects the module.
  llvm::Module module{"popc_vertices", context};
  Emitter emitter{module};
  std::map<std::string, uint32_t> byKey;
  std::set<std::string> names;
  std::vector<VertexTypeInfo> types;
};

VertexCodegen::VertexCodegen() : impl_(std::make_unique<Impl>()) {
  impl_->module.setSourceFileName("popc_vertices");
}

VertexCodegen::~VertexCodegen() = default;
VertexCodegen::VertexCodegen(VertexCodegen &&) noexcept = default;

uint32_t VertexCodegen::getOrCreate(const KernelSpec &spec) {
  Impl &im = *impl_;
  std::string k = kernelKey(spec);
  if (auto it = im.byKey.find(k); it != im.byKey.end())
    return it->second;
  KernelDesc desc = std::visit([](const auto &s) { return describe(s); }, spec); // validates; throws
  auto index = static_cast<uint32_t>(im.types.size());
  VertexTypeInfo info;
  info.symbol = fmt::format("v{}_{}", index, desc.kind);
  info.name = im.names.count(desc.name) ? fmt::format("{}_v{}", desc.name, index) : desc.name;
  info.fields = std::move(desc.fields);
  info.cycles = desc.cycles;

  im.emitter.beginKernel(info.symbol, info.fields.size());
  try {
    std::visit([&](const auto &s) { emit(im.emitter, s); }, spec);
  } catch (...) {
    // Keep the module valid: drop the half-built vertex.
    for (const std::string &sym : {info.symbol, info.symbol + ".body"})
      if (llvm::Function *f = im.module.getFunction(sym))
        f->dropAllReferences();
    for (const std::string &sym : {info.symbol, info.symbol + ".body"})
      if (llvm::Function *f = im.module.getFunction(sym))
        f->eraseFromParent();
    throw;
  }
  im.emitter.endKernel();

  im.names.insert(info.name);
  im.byKey.emplace(k, index);
  im.types.push_back(std::move(info));
  return index;
}

const std::vector<VertexTypeInfo> &VertexCodegen::vertexTypes() const { return impl_->types; }

namespace {

void verify(const llvm::Module &m, const char *when) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(m, &os))
    fail("codegen: internal error: vertex module invalid {}: {}", when, os.str());
}

} // namespace

std::vector<uint8_t> VertexCodegen::finish() {
  verify(impl_->module, "after generation");
  // Work on a copy so finish() can be called again (same bytes) or more
  // vertices added afterwards.
  std::unique_ptr<llvm::Module> m = llvm::CloneModule(impl_->module);
  linkCodelets(*m);
  optimisePortable(*m);
  verify(*m, "after optimisation");
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::WriteBitcodeToFile(*m, os);
  return std::vector<uint8_t>(buffer.begin(), buffer.end());
}

} // namespace popc::codegen
