#include "runtime/jit.h"

#include "runtime/bitcode_gate.h"
#include "runtime/memory_sandbox.h"
#include "runtime/object_cache.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "support/log.h"
#include "support/version.h"

#include <xxhash.h>

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/SmallPtrSet.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/Config/llvm-config.h>
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/InstIterator.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <dlfcn.h>
#include <exception>
#include <mutex>
#include <numeric>

namespace popc::runtime {

namespace {

// More partitions than threads so a few slow functions do not leave a
// thread idle at the end; each costs one lazy re-read of the bitcode.
constexpr size_t kPartitionsPerThread = 4;

// Symbols the generated machine code may reference: the allow-listed libm
// functions (bitcode_gate.cpp), the float variants LLVM lowers math
// intrinsics to, and the libc/libgcc helpers codegen emits for memory
// intrinsics and half-precision conversions. Resolved one by one with dlsym;
// nothing else in the process is reachable.
const std::vector<std::string> &runtimeSymbols() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v = allowedLibmFunctions();
    for (const char *base : {"exp", "exp2", "exp10", "log", "log2", "log10", "sqrt", "fabs", "fmax",
                             "fmin", "floor", "ceil", "trunc", "round", "roundeven", "rint",
                             "nearbyint", "pow", "sin", "cos", "fma", "copysign"}) {
      v.push_back(base);
      v.push_back(std::string(base) + "f");
    }
    for (const char *helper : {"memcpy", "memset", "memmove", "__truncsfhf2", "__extendhfsf2",
                               "__truncdfhf2", "__gnu_h2f_ieee", "__gnu_f2h_ieee", "__udivti3",
                               "__umodti3", "__divti3", "__modti3"})
      v.push_back(helper);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  }();
  return names;
}

[[noreturn]] void failLlvm(const std::string &where, const char *what, llvm::Error err) {
  std::string message = llvm::toString(std::move(err));
  fail("{}: {}: {}", where, what, message.substr(0, message.find('\n')));
}

void initLlvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// ---- partitioning -----------------------------------------------------------

struct UnionFind {
  std::vector<size_t> parent;
  explicit UnionFind(size_t n) : parent(n) { std::iota(parent.begin(), parent.end(), size_t{0}); }
  size_t find(size_t x) {
    while (parent[x] != x)
      x = parent[x] = parent[parent[x]];
    return x;
  }
  // The smaller index stays the root, so roots follow module order.
  void join(size_t a, size_t b) {
    a = find(a);
    b = find(b);
    if (a != b)
      parent[std::max(a, b)] = std::min(a, b);
  }
};

// Globals reachable from `c` through constant expressions and aggregates
// (a worklist: nesting depth comes from the file).
void globalsIn(const llvm::Constant *c, std::vector<const llvm::GlobalValue *> &out,
               llvm::SmallPtrSetImpl<const llvm::Constant *> &seen) {
  std::vector<const llvm::Constant *> work{c};
  while (!work.empty()) {
    const llvm::Constant *k = work.back();
    work.pop_back();
    if (!seen.insert(k).second)
      continue;
    if (auto *gv = llvm::dyn_cast<llvm::GlobalValue>(k)) {
      out.push_back(gv);
      continue;
    }
    for (const llvm::Use &u : k->operands())
      if (auto *op = llvm::dyn_cast<llvm::Constant>(u.get()))
        work.push_back(op);
  }
}

// A global each partition may have its own copy of without changing what the
// code computes: declarations (intrinsics, libm) and immutable data whose
// address is not significant and that points at nothing.
bool copyable(const llvm::GlobalValue &gv) {
  if (auto *f = llvm::dyn_cast<llvm::Function>(&gv))
    return f->isDeclaration();
  auto *g = llvm::dyn_cast<llvm::GlobalVariable>(&gv);
  if (!g || !g->isConstant() || !g->hasGlobalUnnamedAddr() || !g->hasInitializer())
    return false;
  std::vector<const llvm::GlobalValue *> refs;
  llvm::SmallPtrSet<const llvm::Constant *, 8> seen;
  globalsIn(g->getInitializer(), refs, seen);
  return refs.empty();
}

// keep[i]: the module's i-th function (module order) is defined in this partition.
struct Partition {
  std::vector<bool> keep;
  uint64_t size = 0;
};

// Groups the defined functions into connected components of "refers to"
// (through calls, addresses and non-copyable globals), then deals the
// components, largest first, to the least loaded of `maxParts` partitions.
std::vector<Partition> partitionModule(const llvm::Module &m, size_t maxParts) {
  llvm::DenseMap<const llvm::GlobalValue *, size_t> index;
  std::vector<const llvm::Function *> functions;
  for (const llvm::Function &f : m) {
    index[&f] = functions.size();
    functions.push_back(&f);
  }
  size_t n = functions.size();
  for (const llvm::GlobalVariable &g : m.globals())
    index[&g] = n++;
  UnionFind groups(n);

  auto joinAll = [&](size_t node, const std::vector<const llvm::GlobalValue *> &refs) {
    for (const llvm::GlobalValue *gv : refs) {
      if (copyable(*gv))
        continue;
      auto it = index.find(gv);
      POPC_ASSERT(it != index.end()); // the gate admits no aliases or ifuncs
      groups.join(node, it->second);
    }
  };
  for (const llvm::Function *f : functions) {
    if (f->isDeclaration())
      continue;
    std::vector<const llvm::GlobalValue *> refs;
    llvm::SmallPtrSet<const llvm::Constant *, 32> seen;
    for (const llvm::Use &u : f->operands()) // personality, prefix, prologue
      if (auto *c = llvm::dyn_cast_or_null<llvm::Constant>(u.get()))
        globalsIn(c, refs, seen);
    for (const llvm::Instruction &inst : llvm::instructions(*f))
      for (const llvm::Use &u : inst.operands())
        if (auto *c = llvm::dyn_cast<llvm::Constant>(u.get()))
          globalsIn(c, refs, seen);
    joinAll(index.find(f)->second, refs);
  }
  for (const llvm::GlobalVariable &g : m.globals()) {
    if (!g.hasInitializer() || copyable(g))
      continue;
    std::vector<const llvm::GlobalValue *> refs;
    llvm::SmallPtrSet<const llvm::Constant *, 8> seen;
    globalsIn(g.getInitializer(), refs, seen);
    joinAll(index.find(&g)->second, refs);
  }

  // Components in module order of their first function, with their sizes.
  struct Component {
    std::vector<size_t> functions;
    uint64_t size = 0;
  };
  std::vector<Component> components;
  std::vector<size_t> componentOfRoot(n, SIZE_MAX);
  for (size_t i = 0; i < functions.size(); ++i) {
    if (functions[i]->isDeclaration())
      continue;
    size_t root = groups.find(i);
    if (componentOfRoot[root] == SIZE_MAX) {
      componentOfRoot[root] = components.size();
      components.emplace_back();
    }
    Component &c = components[componentOfRoot[root]];
    c.functions.push_back(i);
    c.size += functions[i]->getInstructionCount() + 1;
  }

  std::vector<size_t> order(components.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return components[a].size > components[b].size; });
  std::vector<Partition> parts(std::min(std::max<size_t>(maxParts, 1), components.size()));
  for (Partition &p : parts)
    p.keep.assign(functions.size(), false);
  for (size_t c : order) {
    Partition &p = *std::min_element(parts.begin(), parts.end(),
                                     [](const Partition &a, const Partition &b) { return a.size < b.size; });
    for (size_t f : components[c].functions)
      p.keep[f] = true;
    p.size += components[c].size;
  }
  // Largest first, so the pool starts the long ones early.
  std::stable_sort(parts.begin(), parts.end(), [](const Partition &a, const Partition &b) { return a.size > b.size; });
  return parts;
}

// Unnamed globals get symbol names from their position among the unnamed
// ones of their module ("__unnamed_1"), which would clash between partitions.
void nameUnnamedGlobals(llvm::Module &m) {
  for (llvm::GlobalValue &gv : m.global_values())
    if (!gv.hasName())
      gv.setName("__popc_unnamed"); // LLVM makes it unique
}

double threadCpuSeconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

// ---- per-partition compile ---------------------------------------------------

struct HostTarget {
  std::string cpu;
  std::string features;
  bool avx512 = false;
  // The optimisation pipeline's target and the code generator's (which is
  // the one LLJIT would use: position independent, small code model).
  llvm::orc::JITTargetMachineBuilder optimiseTmb{llvm::Triple()};
  llvm::orc::JITTargetMachineBuilder codegenTmb{llvm::Triple()};
};

// The host CPU, its features, and the target machine builders for the O3
// pipeline and for code generation.
HostTarget detectHost() {
  HostTarget host;
  host.cpu = llvm::sys::getHostCPUName().str();
  llvm::SubtargetFeatures features;
  for (const auto &f : llvm::sys::getHostCPUFeatures())
    features.AddFeature(f.first(), f.second);
  host.features = features.getString();
  host.avx512 = llvm::sys::getHostCPUFeatures().lookup("avx512f");
  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(llvm::sys::getProcessTriple())};
  jtmb.setCPU(host.cpu);
  jtmb.addFeatures(features.getFeatures());
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  host.optimiseTmb = jtmb;
  jtmb.setRelocationModel(llvm::Reloc::PIC_);
  jtmb.setCodeModel(llvm::CodeModel::Small);
  // The code generator at Less runs the same passes but skips x86's second,
  // post-register-allocation scheduling, which an out-of-order core does not
  // need: the same instructions (GoogLeNet's machine code is as many bytes),
  // 5 % less JIT CPU, the vertex benchmark as fast (docs/performance.md,
  // sixteenth round).
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Less);
  host.codegenTmb = jtmb;
  if (auto tm = jtmb.createTargetMachine(); !tm)
    failLlvm("JIT", "cannot create a target machine for the host", tm.takeError());
  return host;
}

// Keeps only the partition's function bodies (and what they use) of a lazily
// read module. Bodies are read before anything is dropped so their uses keep
// the globals they need alive.
void extractPartition(llvm::Module &m, const Partition &part, const std::string &where) {
  std::vector<llvm::Function *> others;
  std::vector<llvm::Function *> dropped; // bodies of other partitions
  size_t i = 0;
  for (llvm::Function &f : m) {
    POPC_ASSERT(i < part.keep.size());
    if (part.keep[i++]) {
      if (llvm::Error err = f.materialize())
        failLlvm(where, "cannot re-read code module", std::move(err));
    } else {
      others.push_back(&f);
    }
  }
  POPC_ASSERT(i == part.keep.size());
  for (llvm::Function *f : others)
    if (!f->isDeclaration()) {
      f->deleteBody();
      dropped.push_back(f);
    }
  // Erase what nothing in the partition uses any more (globals may refer to
  // functions and to each other, so repeat until nothing changes).
  for (bool erased = true; erased;) {
    erased = false;
    for (auto it = m.global_begin(); it != m.global_end();) {
      llvm::GlobalVariable &g = *it++;
      g.removeDeadConstantUsers();
      if (g.use_empty()) {
        g.eraseFromParent();
        erased = true;
      }
    }
    for (auto it = others.begin(); it != others.end();) {
      (*it)->removeDeadConstantUsers();
      if ((*it)->use_empty()) {
        std::erase(dropped, *it);
        (*it)->eraseFromParent();
        it = others.erase(it);
        erased = true;
      } else {
        ++it;
      }
    }
  }
  // A partition is closed under references: no body it needs was dropped.
  POPC_ASSERT(dropped.empty());
  if (llvm::Error err = m.materializeAll())
    failLlvm(where, "cannot re-read code module", std::move(err));
}

// The host half of the O3 pipeline (see below).
void optimise(llvm::Module &m, llvm::TargetMachine &tm, const HostTarget &host) {
  m.setTargetTriple(tm.getTargetTriple().str());
  m.setDataLayout(tm.createDataLayout());
  // The file's own target attributes (if any) must not pin us to a weaker CPU.
  for (llvm::Function &f : m) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", host.cpu);
    f.addFnAttr("target-features", host.features);
    if (host.avx512)
      f.addFnAttr("prefer-vector-width", "512");
  }

  llvm::PipelineTuningOptions pto;
  pto.LoopVectorization = true;
  pto.SLPVectorization = true;
  pto.LoopUnrolling = true;
  pto.LoopInterleaving = true;
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm, pto);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  // The optimisation half of O3, as an LTO back end runs it, after a short
  // clean-up. The bitcode has been through the target-independent
  // simplification already (codegen's portable pipeline, the "pre-link"
  // half), so running all of O3 again mostly redid that work: GVN and
  // InstCombine were half of GoogLeNet's 2.7 s of optimiser CPU on a cold
  // start, for the same steady-state speed (docs/performance.md, ninth
  // round). The clean-up inlines what is left to inline and fully unrolls
  // small constant loops before the vectorisers see them, as O3's
  // simplification would: a loop over a few bytes of stack then never
  // becomes a vector access wider than its buffer, which the sandbox refuses.
  llvm::ModulePassManager mpm;
  if (llvm::Error err = pb.parsePassPipeline(mpm, "cgscc(inline),function(sroa<modify-cfg>,early-cse,"
                                                  "loop(loop-unroll-full),sroa<modify-cfg>,instcombine,simplifycfg)"))
    failLlvm("JIT", "cannot build the host pipeline", std::move(err));
  mpm.addPass(pb.buildModuleOptimizationPipeline(llvm::OptimizationLevel::O3, llvm::ThinOrFullLTOPhase::None));
  mpm.run(m, mam);
}

// Runs on a pool thread: everything LLVM here lives in this call's own context.
std::unique_ptr<llvm::MemoryBuffer> compilePartition(llvm::StringRef bitcode, const Partition &part,
                                                     const HostTarget &host, const std::string &where,
                                                     const MemorySandbox *sandbox) {
  llvm::LLVMContext context;
  auto lazy = llvm::getLazyBitcodeModule(llvm::MemoryBufferRef(bitcode, "vertex-code"), context);
  if (!lazy)
    failLlvm(where, "cannot re-read code module", lazy.takeError());
  llvm::Module &m = **lazy;
  extractPartition(m, part, where);

  // Target machines are not shared between threads; builders are copied.
  auto optimiseTm = llvm::orc::JITTargetMachineBuilder(host.optimiseTmb).createTargetMachine();
  if (!optimiseTm)
    failLlvm("JIT", "cannot create a target machine for the host", optimiseTm.takeError());
  optimise(m, **optimiseTm, host);
  // After O3 so vectorisation sees the original accesses; nothing but the
  // code generator runs after it.
  if (sandbox)
    confineMemoryAccesses(m, *sandbox, where);

  auto codegenTm = llvm::orc::JITTargetMachineBuilder(host.codegenTmb).createTargetMachine();
  if (!codegenTm)
    failLlvm("JIT", "cannot create a target machine for the host", codegenTm.takeError());
  llvm::orc::SimpleCompiler compile(**codegenTm);
  auto object = compile(m);
  if (!object)
    failLlvm(where, "cannot compile code module", object.takeError());
  return std::move(*object);
}

// An object cache key: XXH3-128 over named fields, as 32 hex digits. Every
// key starts with what decides machine code besides the input: the key
// format, LLVM, our build (the O3 pipeline and the sandbox pass), the host.
class KeyHasher {
public:
  KeyHasher(const std::string &format, const HostTarget &host) : state_(XXH3_createState()) {
    XXH3_128bits_reset(state_);
    text("key-format", format);
    text("llvm", LLVM_VERSION_STRING);
    text("build-id", buildId());
    text("triple", llvm::sys::getProcessTriple());
    text("cpu", host.cpu);
    text("features", host.features);
  }
  ~KeyHasher() { XXH3_freeState(state_); }
  KeyHasher(const KeyHasher &) = delete;
  KeyHasher &operator=(const KeyHasher &) = delete;
  void field(std::string_view name, const void *data, size_t size) {
    uint64_t sizes[2] = {name.size(), size};
    XXH3_128bits_update(state_, sizes, sizeof sizes);
    XXH3_128bits_update(state_, name.data(), name.size());
    XXH3_128bits_update(state_, data, size);
  }
  void text(std::string_view name, const std::string &value) { field(name, value.data(), value.size()); }
  void sandbox(const MemorySandbox &sandbox) {
    std::string s = fmt::format("window {} {} {}", sandbox.guard, sandbox.minWindow, sandbox.limitSlotBelow);
    for (const auto &[entry, fields] : sandbox.entryFieldCounts)
      s += fmt::format(" {}={}", entry, fields);
    text("sandbox", s);
  }
  std::string hex() const {
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state_));
    std::string out;
    for (unsigned char b : c.digest)
      out += fmt::format("{:02x}", b);
    return out;
  }

private:
  XXH3_state_t *state_;
};

// The object cache key of one partition: everything that decides its
// machine code (see object_cache.h).
std::string objectKey(llvm::StringRef bitcode, const Partition &part, const HostTarget &host,
                      const MemorySandbox *sandbox) {
  KeyHasher key("popc-obj-1", host);
  key.field("bitcode", bitcode.data(), bitcode.size());
  std::string keep;
  for (bool k : part.keep)
    keep += k ? '1' : '0';
  key.text("partition", keep);
  if (sandbox)
    key.sandbox(*sandbox);
  return key.hex();
}

size_t partitionCount(unsigned threads) { return threads <= 1 ? 1 : threads * kPartitionsPerThread; }

// A module entry's value: its partitions' keys, one per line.
constexpr size_t kKeyDigits = 32;

// An object file from the cache, as the JIT takes it.
std::unique_ptr<llvm::MemoryBuffer> cachedObjectBuffer(const std::vector<uint8_t> &object) {
  return llvm::MemoryBuffer::getMemBufferCopy(
      llvm::StringRef(reinterpret_cast<const char *>(object.data()), object.size()), "cached-object");
}

} // namespace

struct Jit::Impl {
  ThreadPool *pool = nullptr;
  HostTarget host;
  std::unique_ptr<llvm::orc::LLJIT> jit;
  size_t lastPartitions = 0, lastCacheHits = 0;
  std::shared_ptr<ObjectCache> cache = objectCache();

  void addObject(std::unique_ptr<llvm::MemoryBuffer> object, const std::string &where) {
    if (auto err = jit->addObjectFile(std::move(object)))
      failLlvm(where, "cannot add code module to the JIT", std::move(err));
  }
};

Jit::Jit(ThreadPool *pool) : impl_(std::make_unique<Impl>()) {
  initLlvm();
  impl_->pool = pool;
  impl_->host = detectHost();
  llvm::orc::JITTargetMachineBuilder jtmb = impl_->host.codegenTmb;

  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(jtmb)
                 .setLinkProcessSymbolsByDefault(false)
                 .setPlatformSetUp(llvm::orc::setUpInactivePlatform)
                 .create();
  if (!jit)
    failLlvm("JIT", "cannot create the JIT", jit.takeError());
  impl_->jit = std::move(*jit);
  // Failures reach us through lookup()'s Expected; keep ORC from also printing them.
  impl_->jit->getExecutionSession().setErrorReporter([](llvm::Error err) {
    log::get("runtime")->debug("JIT: {}", llvm::toString(std::move(err)));
  });

  llvm::orc::SymbolMap symbols;
  for (const std::string &name : runtimeSymbols()) {
    void *address = ::dlsym(RTLD_DEFAULT, name.c_str());
    if (!address)
      continue; // absent helpers are simply unresolvable, as for any other symbol
    symbols[impl_->jit->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                                  llvm::JITSymbolFlags::Exported |
                                                      llvm::JITSymbolFlags::Callable};
  }
  if (auto err = impl_->jit->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))))
    failLlvm("JIT", "cannot define runtime symbols", std::move(err));
}

Jit::~Jit() = default;

const std::string &Jit::hostCpu() const { return impl_->host.cpu; }

size_t Jit::lastPartitions() const { return impl_->lastPartitions; }

size_t Jit::lastCacheHits() const { return impl_->lastCacheHits; }

std::string moduleCacheKey(std::span<const uint8_t> bitcode, const MemorySandbox &sandbox, unsigned threads) {
  initLlvm();
  KeyHasher key("popc-module-1", detectHost());
  key.field("bitcode", bitcode.data(), bitcode.size());
  key.sandbox(sandbox);
  key.text("partitions", std::to_string(partitionCount(threads)));
  return key.hex();
}

std::optional<std::vector<std::vector<uint8_t>>> cachedModuleObjects(const std::string &moduleKey) {
  std::shared_ptr<ObjectCache> cache = objectCache();
  if (!cache)
    return std::nullopt;
  const std::optional<std::vector<uint8_t>> list = cache->load(moduleKey);
  if (!list || list->empty() || list->size() % (kKeyDigits + 1) != 0)
    return std::nullopt;
  std::vector<std::vector<uint8_t>> objects;
  for (size_t at = 0; at < list->size(); at += kKeyDigits + 1) {
    const std::string key(list->begin() + at, list->begin() + at + kKeyDigits);
    if ((*list)[at + kKeyDigits] != '\n' || key.find_first_not_of("0123456789abcdef") != std::string::npos)
      return std::nullopt;
    std::optional<std::vector<uint8_t>> object = cache->load(key);
    if (!object)
      return std::nullopt;
    objects.push_back(std::move(*object));
  }
  return objects;
}

void Jit::addObjects(std::vector<std::vector<uint8_t>> objects, const std::string &where) {
  for (const std::vector<uint8_t> &object : objects)
    impl_->addObject(cachedObjectBuffer(object), where);
  impl_->lastPartitions = impl_->lastCacheHits = objects.size();
  log::get("runtime")->info("{}: JIT object cache: {} of {} partitions from the cache, 0 compiled by LLVM (the "
                            "whole module: its bitcode was not read)",
                            where, objects.size(), objects.size());
}

void Jit::addModule(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                    const std::string &where, const MemorySandbox *sandbox, const std::string &moduleKey) {
  unsigned threads = impl_->pool ? impl_->pool->size() : 1;
  nameUnnamedGlobals(*module);
  std::vector<Partition> parts = partitionModule(*module, partitionCount(threads));
  // The gated module itself is the source of every partition: re-reading the
  // popef's bytes instead could see a file changed since the gate ran.
  llvm::SmallVector<char, 0> bitcode;
  {
    llvm::raw_svector_ostream os(bitcode);
    llvm::WriteBitcodeToFile(*module, os);
  }
  module.reset();
  context.reset();

  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects(parts.size());
  std::vector<std::exception_ptr> errors(parts.size());
  llvm::StringRef bytes(bitcode.data(), bitcode.size());
  std::vector<double> cpuSeconds(parts.size());
  auto wallStart = std::chrono::steady_clock::now();
  ObjectCache *cache = impl_->cache.get();
  std::vector<std::string> keys(parts.size());
  std::atomic<size_t> hits{0};
  auto run = [&](size_t i) {
    double cpuStart = threadCpuSeconds();
    try {
      if (cache) {
        keys[i] = objectKey(bytes, parts[i], impl_->host, sandbox);
        if (auto object = cache->load(keys[i])) {
          objects[i] = cachedObjectBuffer(*object);
          ++hits;
        }
      }
      if (!objects[i]) {
        objects[i] = compilePartition(bytes, parts[i], impl_->host, where, sandbox);
        if (cache)
          cache->store(keys[i], {reinterpret_cast<const uint8_t *>(objects[i]->getBufferStart()),
                                 objects[i]->getBufferSize()});
      }
    } catch (...) {
      errors[i] = std::current_exception();
    }
    cpuSeconds[i] = threadCpuSeconds() - cpuStart;
  };
  if (impl_->pool)
    impl_->pool->parallelFor(parts.size(), run);
  else
    for (size_t i = 0; i < parts.size(); ++i)
      run(i);
  for (const std::exception_ptr &e : errors)
    if (e)
      std::rethrow_exception(e);

  for (auto &object : objects)
    impl_->addObject(std::move(object), where);
  if (cache && !moduleKey.empty() && !keys.empty()) {
    std::string list;
    for (const std::string &key : keys)
      list += key + '\n';
    cache->store(moduleKey, {reinterpret_cast<const uint8_t *>(list.data()), list.size()});
  }
  impl_->lastPartitions = parts.size();
  impl_->lastCacheHits = hits;
  std::chrono::duration<double> wall = std::chrono::steady_clock::now() - wallStart;
  if (cache)
    log::get("runtime")->info("{}: JIT object cache: {} of {} partitions from the cache, {} compiled by LLVM",
                              where, hits.load(), parts.size(), parts.size() - hits.load());
  log::get("runtime")->debug("{}: JIT compiled {} partitions on {} threads in {:.3f} s ({:.3f} s CPU, "
                             "largest partition {:.3f} s)",
                             where, parts.size(), threads, wall.count(),
                             std::accumulate(cpuSeconds.begin(), cpuSeconds.end(), 0.0),
                             parts.empty() ? 0.0 : *std::max_element(cpuSeconds.begin(), cpuSeconds.end()));
}

VertexFn Jit::lookup(const std::string &symbol, const std::string &where) {
  auto address = impl_->jit->lookup(symbol);
  if (!address)
    failLlvm(where, ("cannot compile entry function '" + symbol + "'").c_str(), address.takeError());
  return address->toPtr<VertexFn>();
}

void optimiseForHost(llvm::Module &module) {
  initLlvm();
  const HostTarget host = detectHost();
  auto tm = llvm::orc::JITTargetMachineBuilder(host.optimiseTmb).createTargetMachine();
  if (!tm)
    failLlvm("JIT", "cannot create a target machine for the host", tm.takeError());
  optimise(module, **tm, host);
}

} // namespace popc::runtime
