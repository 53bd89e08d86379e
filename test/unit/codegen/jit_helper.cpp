#include "test/unit/codegen/jit_helper.h"

#include <catch2/catch.hpp>

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/ExecutionEngine/Orc/ThreadSafeModule.h>
#include <llvm/IR/Module.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>

#include <cmath>
#include <mutex>

namespace popc::codegen::test {

namespace {

void initLLVM() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

template <typename T> T check(llvm::Expected<T> v) {
  if (!v) {
    std::string msg = llvm::toString(v.takeError());
    FAIL("LLVM: " << msg);
  }
  return std::move(*v);
}

void checkErr(llvm::Error e) {
  if (e) {
    std::string msg = llvm::toString(std::move(e));
    FAIL("LLVM: " << msg);
  }
}

std::unique_ptr<llvm::Module> parse(const Bytes &bitcode, llvm::LLVMContext &ctx) {
  llvm::StringRef data(reinterpret_cast<const char *>(bitcode.data()), bitcode.size());
  return check(llvm::parseBitcodeFile(llvm::MemoryBufferRef(data, "vertices"), ctx));
}

// What runtime/jit.cpp does: adopt the host triple/layout/CPU, then O3 (loop and
// SLP vectorisers on) with the host TargetMachine.
void optimiseForHost(llvm::Module &m) {
  auto jtmb = check(llvm::orc::JITTargetMachineBuilder::detectHost());
  std::unique_ptr<llvm::TargetMachine> tm = check(jtmb.createTargetMachine());
  m.setTargetTriple(tm->getTargetTriple().str());
  m.setDataLayout(tm->createDataLayout());
  for (llvm::Function &f : m)
    if (!f.isDeclaration()) {
      f.addFnAttr("target-cpu", tm->getTargetCPU());
      f.addFnAttr("target-features", tm->getTargetFeatureString());
    }
  llvm::PipelineTuningOptions pto;
  pto.SLPVectorization = true; // off by default in PassBuilder; small fully-unrolled loops need it
  llvm::PassBuilder pb(tm.get(), pto);
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3).run(m, mam);
}

} // namespace

struct JitModule::Impl {
  std::unique_ptr<llvm::orc::LLJIT> jit;
};

JitModule::JitModule(const Bytes &bitcode, bool optimise) : impl_(std::make_unique<Impl>()) {
  initLLVM();
  auto ctx = std::make_unique<llvm::LLVMContext>();
  std::unique_ptr<llvm::Module> m = parse(bitcode, *ctx);
  if (optimise)
    optimiseForHost(*m);
  impl_->jit = check(llvm::orc::LLJITBuilder().create());
  char prefix = impl_->jit->getDataLayout().getGlobalPrefix();
  impl_->jit->getMainJITDylib().addGenerator(
      check(llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(prefix)));
  checkErr(impl_->jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(m), std::move(ctx))));
}

JitModule::~JitModule() = default;

JitModule::VertexFn JitModule::lookup(const std::string &symbol) {
  return check(impl_->jit->lookup(symbol)).toPtr<VertexFn>();
}

std::vector<Bytes> JitModule::run(const VertexTypeInfo &vertex, const std::vector<Bytes> &fields) {
  REQUIRE(fields.size() == vertex.fields.size());
  // All-ones bytes are NaN as f32 and f64: a kernel that reads past its
  // fields (e.g. a vector load over the end) produces NaN and fails the test.
  constexpr uint8_t kCanary = 0xFF;
  constexpr size_t kGap = 64;
  std::vector<uint32_t> offsets;
  size_t pos = kGap;
  for (size_t i = 0; i < fields.size(); ++i) {
    REQUIRE(fields[i].size() == vertex.fields[i].bytes);
    pos = (pos + 63) / 64 * 64;
    offsets.push_back(static_cast<uint32_t>(pos));
    pos += fields[i].size() + kGap;
  }
  // 64-byte aligned tile memory, filled with the canary.
  std::vector<uint64_t> storage((pos + 64) / 8 + 8);
  auto *tile = reinterpret_cast<uint8_t *>(storage.data());
  tile += (64 - reinterpret_cast<uintptr_t>(tile) % 64) % 64;
  std::memset(tile, kCanary, pos);
  for (size_t i = 0; i < fields.size(); ++i)
    if (!fields[i].empty())
      std::memcpy(tile + offsets[i], fields[i].data(), fields[i].size());
  Bytes before(tile, tile + pos);

  lookup(vertex.symbol)(tile, offsets.data());

  std::vector<Bytes> result;
  std::vector<bool> writable(pos, false);
  for (size_t i = 0; i < fields.size(); ++i) {
    result.emplace_back(tile + offsets[i], tile + offsets[i] + fields[i].size());
    if (vertex.fields[i].access != FieldAccess::Input)
      for (size_t j = 0; j < fields[i].size(); ++j)
        writable[offsets[i] + j] = true;
  }
  size_t stray = 0;
  for (size_t j = 0; j < pos; ++j)
    if (!writable[j] && tile[j] != before[j])
      ++stray;
  INFO("vertex " << vertex.name << " wrote outside its output fields");
  REQUIRE(stray == 0);
  return result;
}

std::string hostOptimisedIR(const Bytes &bitcode) {
  initLLVM();
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = parse(bitcode, ctx);
  optimiseForHost(*m);
  std::string text;
  llvm::raw_string_ostream os(text);
  m->print(os, nullptr);
  return os.str();
}

template <typename T> static void close(const std::vector<T> &got, const std::vector<double> &want, double rtol) {
  REQUIRE(got.size() == want.size());
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    double g = got[i], w = want[i];
    bool ok = std::isnan(w) ? std::isnan(g)
              : std::isinf(w) ? g == w
                              : std::abs(g - w) <= rtol * std::max(std::abs(w), 1.0);
    if (!ok && bad++ < 5)
      UNSCOPED_INFO("index " << i << ": got " << g << ", want " << w);
  }
  REQUIRE(bad == 0);
}

void requireClose(const std::vector<float> &got, const std::vector<double> &want, double rtol) {
  close(got, want, rtol);
}
void requireClose(const std::vector<double> &got, const std::vector<double> &want, double rtol) {
  close(got, want, rtol);
}

} // namespace popc::codegen::test
