// VertexCodegen: dedups specs by key, emits one function per distinct spec,
// and turns them into one module of portable, deterministic bitcode. Types
// are emitted in batches of kBatchTypes, each in a module (and LLVM context)
// of its own; a full batch is linked with its codelets and optimised on a
// worker thread while the lowering goes on, so finish() is left with the
// open batch and linking the batches' bitcode (in type order: the bytes do
// not depend on the threads' timing).
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
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Triple.h>
#include <llvm/Transforms/Utils/Cloning.h>

#include <fmt/format.h>

#include <future>
#include <map>
#include <optional>
#include <set>

namespace popc::codegen {

using namespace detail;

std::string kernelKey(const KernelSpec &spec) {
  return std::visit([](const auto &s) { return key(s); }, spec);
}

namespace {

// Types per batch: enough that a batch's optimisation is worth a thread, few
// enough that a large CNN's (200-400 types) overlap its lowering.
constexpr size_t kBatchTypes = 32;

// A batch of vertex types being emitted, in a context of its own.
struct Batch {
  std::unique_ptr<llvm::LLVMContext> context = std::make_unique<llvm::LLVMContext>();
  // No target triple and no data layout: the bitcode must stay portable. The
  // runtime (like LLJIT) adopts the host's triple and layout when it JITs a
  // module with the default layout; a fixed layout would have to match the
  // host's exactly or LLJIT rejects the module.
  std::unique_ptr<llvm::Module> module = std::make_unique<llvm::Module>("popc_vertices", *context);
  Emitter emitter{*module};
  size_t types = 0;
  Batch() { module->setSourceFileName("popc_vertices"); }
};

void verify(const llvm::Module &m, const char *when) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (llvm::verifyModule(m, &os))
    fail("codegen: internal error: vertex module invalid {}: {}", when, os.str());
}

std::vector<uint8_t> bitcodeOf(const llvm::Module &m) {
  llvm::SmallVector<char, 0> buffer;
  llvm::raw_svector_ostream os(buffer);
  llvm::WriteBitcodeToFile(m, os);
  return std::vector<uint8_t>(buffer.begin(), buffer.end());
}

// A batch's functions, with the codelets they call, optimised (consumes `m`).
std::vector<uint8_t> optimisedBitcode(llvm::Module &m) {
  verify(m, "after generation");
  linkCodelets(m);
  optimisePortable(m);
  verify(m, "after optimisation");
  return bitcodeOf(m);
}

} // namespace

struct VertexCodegen::Impl {
  std::unique_ptr<Batch> open = std::make_unique<Batch>();
  // The full batches' optimised bitcode, in type order. Each batch's task
  // waits for the one before it, so the batches take one core, in order.
  std::vector<std::shared_future<std::vector<uint8_t>>> sealed;
  ~Impl() {
    for (auto &f : sealed)
      f.wait(); // the tasks own their batches; let them finish before the process does
  }
  void seal() {
    std::shared_future<std::vector<uint8_t>> before = sealed.empty() ? decltype(before)() : sealed.back();
    sealed.push_back(std::async(std::launch::async, [batch = std::move(open), before]() {
                       if (before.valid())
                         before.wait();
                       return optimisedBitcode(*batch->module);
                     }).share());
    open = std::make_unique<Batch>();
  }
  // Emits the function `info.symbol` for `spec` into the open batch (sealed
  // once full); on failure the module keeps no part of it.
  void emitFunction(const VertexTypeInfo &info, const std::vector<std::pair<uint32_t, uint32_t>> &optionalFields,
                    const KernelSpec &spec) {
    Batch &batch = *open;
    batch.emitter.beginKernel(info.symbol, info.fields, optionalFields);
    try {
      std::visit([&](const auto &s) { emit(batch.emitter, s); }, spec);
    } catch (...) {
      // Keep the module valid: drop the half-built vertex.
      for (const std::string &sym : {info.symbol, info.symbol + ".body"})
        if (llvm::Function *f = batch.module->getFunction(sym))
          f->dropAllReferences();
      for (const std::string &sym : {info.symbol, info.symbol + ".body"})
        if (llvm::Function *f = batch.module->getFunction(sym))
          f->eraseFromParent();
      throw;
    }
    batch.emitter.endKernel();
    if (++batch.types == kBatchTypes)
      seal();
  }
  std::map<std::string, uint32_t> byKey;
  std::map<std::string, std::string> symbolByCodeKey; // KernelDesc::codeKey -> the function emitted for it
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

VertexCodegen::VertexCodegen() : impl_(std::make_unique<Impl>()) {}

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
  info.name = im.names.count(desc.name) ? fmt::format("{}_v{}", desc.name, index) : desc.name;
  info.fields = std::move(desc.fields);
  info.cycles = desc.cycles;
  const auto shared = desc.codeKey.empty() ? im.symbolByCodeKey.end() : im.symbolByCodeKey.find(desc.codeKey);
  if (shared != im.symbolByCodeKey.end()) {
    // Same code, other immediates: a type of its own (name, cycles, field
    // sizes), no function of its own.
    info.symbol = shared->second;
  } else {
    info.symbol = fmt::format("v{}_{}", index, desc.kind);
    im.emitFunction(info, desc.optionalFields, spec);
    if (!desc.codeKey.empty())
      im.symbolByCodeKey.emplace(desc.codeKey, info.symbol);
  }
  im.names.insert(info.name);
  im.byKey.emplace(k, index);
  im.remember(spec, index);
  im.types.push_back(std::move(info));
  return index;
}

const std::vector<VertexTypeInfo> &VertexCodegen::vertexTypes() const { return impl_->types; }

std::vector<uint8_t> VertexCodegen::finish() {
  Impl &im = *impl_;
  std::vector<std::vector<uint8_t>> parts;
  for (auto &f : im.sealed)
    parts.push_back(f.get()); // rethrows a batch's failure
  // The open batch on a copy, so finish() can be called again (same bytes) or
  // more vertices added afterwards.
  if (im.open->types > 0 || parts.empty()) {
    std::unique_ptr<llvm::Module> m = llvm::CloneModule(*im.open->module);
    parts.push_back(optimisedBitcode(*m));
  }
  if (parts.size() == 1)
    return std::move(parts[0]);
  // One module: each batch's bitcode linked in type order. Batches share no
  // external symbol (entry points are unique; codelets and bodies are
  // internal, renamed by the linker where two batches' names meet).
  llvm::LLVMContext context;
  auto linked = std::make_unique<llvm::Module>("popc_vertices", context);
  linked->setSourceFileName("popc_vertices");
  for (const std::vector<uint8_t> &part : parts) {
    auto buffer = llvm::MemoryBuffer::getMemBuffer(
        llvm::StringRef(reinterpret_cast<const char *>(part.data()), part.size()), "popc_vertices", false);
    auto parsed = llvm::parseBitcodeFile(buffer->getMemBufferRef(), context);
    if (!parsed)
      fail("codegen: internal error: a batch's bitcode does not parse: {}", llvm::toString(parsed.takeError()));
    if (llvm::Linker::linkModules(*linked, std::move(*parsed)))
      fail("codegen: internal error: linking the vertex batches failed");
  }
  verify(*linked, "after linking the batches");
  return bitcodeOf(*linked);
}

} // namespace popc::codegen
