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
#include <optional>
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
  // The last few convolution and pooling specs and their types: a layer asks
  // for the same few specs once per tile, hundreds of thousands of times in
  // a large CNN, and formatting each one's key was a tenth of its compile.
  // Only specs of integers and flags, whose equal values have equal keys
  // (floats would not: -0.0 == 0.0).
  struct Recent {
    KernelSpec spec;
    uint32_t type;
  };
  static constexpr size_t kRecent = 8;
  std::vector<Recent> recent;
  size_t nextRecent = 0;
  static bool sameSpec(const KernelSpec &a, const KernelSpec &b) {
    if (const ConvSpec *x = std::get_if<ConvSpec>(&a))
      return std::holds_alternative<ConvSpec>(b) && *x == std::get<ConvSpec>(b);
    if (const PoolSpec *x = std::get_if<PoolSpec>(&a))
      return std::holds_alternative<PoolSpec>(b) && *x == std::get<PoolSpec>(b);
    return false;
  }
  static bool cacheable(const KernelSpec &spec) {
    return std::holds_alternative<ConvSpec>(spec) || std::holds_alternative<PoolSpec>(spec);
  }
  std::optional<uint32_t> findRecent(const KernelSpec &spec) const {
    if (!cacheable(spec))
      return std::nullopt;
    for (const Recent &r : recent)
      if (sameSpec(r.spec, spec))
        return r.type;
    return std::nullopt;
  }
  void remember(const KernelSpec &spec, uint32_t type) {
    if (!cacheable(spec))
      return;
    if (recent.size() < kRecent)
      recent.push_back({spec, type});
    else
      recent[nextRecent++ % kRecent] = {spec, type};
  }
};

VertexCodegen::VertexCodegen() : impl_(std::make_unique<Impl>()) {
  impl_->module.setSourceFileName("popc_vertices");
}

VertexCodegen::~VertexCodegen() = default;
VertexCodegen::VertexCodegen(VertexCodegen &&) noexcept = default;

uint32_t VertexCodegen::getOrCreate(const KernelSpec &spec) {
  Impl &im = *impl_;
  if (std::optional<uint32_t> type = im.findRecent(spec))
    return *type;
  std::string k = kernelKey(spec);
  if (auto it = im.byKey.find(k); it != im.byKey.end()) {
    im.remember(spec, it->second);
    return it->second;
  }
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
  im.remember(spec, index);
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
