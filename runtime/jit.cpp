#include "runtime/jit.h"

#include "runtime/bitcode_gate.h"
#include "support/error.h"
#include "support/log.h"

#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include <dlfcn.h>
#include <mutex>

namespace popc::runtime {

namespace {

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

} // namespace

struct Jit::Impl {
  std::string cpu;
  std::string features;
  bool avx512 = false;
  std::unique_ptr<llvm::TargetMachine> tm; // for the optimisation pipeline
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

Jit::Jit() : impl_(std::make_unique<Impl>()) {
  initLlvm();
  impl_->cpu = llvm::sys::getHostCPUName().str();
  llvm::SubtargetFeatures features;
  for (const auto &f : llvm::sys::getHostCPUFeatures())
    features.AddFeature(f.first(), f.second);
  impl_->features = features.getString();
  impl_->avx512 = llvm::sys::getHostCPUFeatures().lookup("avx512f");

  llvm::orc::JITTargetMachineBuilder jtmb{llvm::Triple(llvm::sys::getProcessTriple())};
  jtmb.setCPU(impl_->cpu);
  jtmb.addFeatures(features.getFeatures());
  jtmb.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);

  auto tm = jtmb.createTargetMachine();
  if (!tm)
    failLlvm("JIT", "cannot create a target machine for the host", tm.takeError());
  impl_->tm = std::move(*tm);

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

const std::string &Jit::hostCpu() const { return impl_->cpu; }

void Jit::addModule(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                    const std::string &where) {
  llvm::TargetMachine &tm = *impl_->tm;
  module->setTargetTriple(tm.getTargetTriple().str());
  module->setDataLayout(tm.createDataLayout());
  // The file's own target attributes (if any) must not pin us to a weaker CPU.
  for (llvm::Function &f : *module) {
    if (f.isDeclaration())
      continue;
    f.addFnAttr("target-cpu", impl_->cpu);
    f.addFnAttr("target-features", impl_->features);
    if (impl_->avx512)
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
  llvm::ModulePassManager mpm = pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3);
  mpm.run(*module, mam);

  llvm::orc::ThreadSafeModule tsm(std::move(module), std::move(context));
  if (auto err = impl_->jit->addIRModule(std::move(tsm)))
    failLlvm(where, "cannot add code module to the JIT", std::move(err));
}

VertexFn Jit::lookup(const std::string &symbol, const std::string &where) {
  auto address = impl_->jit->lookup(symbol);
  if (!address)
    failLlvm(where, ("cannot compile entry function '" + symbol + "'").c_str(), address.takeError());
  return address->toPtr<VertexFn>();
}

} // namespace popc::runtime
