#include "test/unit/codegen/jit_helper.h"

#include <catch2/catch.hpp>

#include "runtime/bitcode_gate.h"
#include "runtime/device_memory.h"
#include "runtime/jit.h"
#include "runtime/memory_sandbox.h"
#include "support/error.h"

#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <cmath>
#include <map>

namespace popc::codegen::test {

namespace {

// One tile of an arena laid out as poprun-lite's (its window and limit
// slot; pages are only mapped where a test writes). Tiles up to 16 MiB: the
// benchmark runs whole layers as one vertex.
constexpr uint32_t kTileBytes = 16 << 20;

} // namespace

struct JitModule::Impl {
  runtime::Jit jit;
  runtime::DeviceMemory memory{1, kTileBytes};
  uint8_t *tile() const { return memory.tile(0); }
};

JitModule::JitModule(VertexCodegen &codegen) : JitModule(codegen.finish(), codegen.vertexTypes()) {}

JitModule::JitModule(const Bytes &bitcode, const std::vector<VertexTypeInfo> &types)
    : impl_(std::make_unique<Impl>()) {
  runtime::MemorySandbox sandbox = runtime::DeviceMemory::sandbox();
  std::vector<std::string> entries;
  for (const VertexTypeInfo &t : types) {
    entries.push_back(t.symbol);
    sandbox.entryFieldCounts[t.symbol] = unsigned(t.fields.size());
  }
  try {
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = runtime::loadCodeModule(*context, bitcode, "test module", entries);
    impl_->jit.addModule(std::move(module), std::move(context), "test module", &sandbox);
  } catch (const Error &e) {
    FAIL("JIT: " << e.what());
  }
}

JitModule::~JitModule() = default;

JitModule::VertexFn JitModule::lookup(const std::string &symbol) {
  try {
    return impl_->jit.lookup(symbol, "test module");
  } catch (const Error &e) {
    FAIL("JIT: " << e.what());
  }
  return nullptr;
}

std::vector<Bytes> JitModule::run(const VertexTypeInfo &vertex, const std::vector<Bytes> &fields,
                                  const std::vector<std::pair<uint32_t, uint32_t>> &standIns) {
  // The memory fields; immediates are the type's numbers (FieldInfo::value).
  REQUIRE(fields.size() == memoryFieldCount(vertex.fields));
  // All-ones bytes are NaN as f32 and f64: a kernel that reads past its
  // fields (e.g. a vector load over the end) produces NaN and fails the test.
  constexpr uint8_t kCanary = 0xFF;
  constexpr size_t kGap = 64;
  std::vector<uint32_t> offsets;
  size_t pos = kGap;
  auto standInOf = [&](size_t i) -> const std::pair<uint32_t, uint32_t> * {
    for (const auto &p : standIns)
      if (p.first == i)
        return &p;
    return nullptr;
  };
  for (size_t i = 0; i < fields.size(); ++i) {
    if (standInOf(i)) {
      offsets.push_back(0); // set below
      continue;
    }
    REQUIRE(fields[i].size() == vertex.fields[i].bytes);
    pos = (pos + 63) / 64 * 64;
    offsets.push_back(static_cast<uint32_t>(pos));
    pos += fields[i].size() + kGap;
  }
  for (const auto &[field, standIn] : standIns)
    offsets.at(field) = offsets.at(standIn);
  for (size_t i = fields.size(); i < vertex.fields.size(); ++i)
    offsets.push_back(vertex.fields[i].value);
  REQUIRE(pos <= kTileBytes);
  uint8_t *tile = impl_->tile();
  std::memset(tile, kCanary, pos);
  for (size_t i = 0; i < fields.size(); ++i)
    if (!fields[i].empty() && !standInOf(i))
      std::memcpy(tile + offsets[i], fields[i].data(), fields[i].size());
  Bytes before(tile, tile + pos);

  lookup(vertex.symbol)(tile, offsets.data());

  std::vector<Bytes> result;
  std::vector<bool> writable(pos, false);
  for (size_t i = 0; i < fields.size(); ++i) {
    if (standInOf(i)) {
      result.emplace_back();
      continue;
    }
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
  llvm::LLVMContext ctx;
  llvm::StringRef data(reinterpret_cast<const char *>(bitcode.data()), bitcode.size());
  auto m = llvm::parseBitcodeFile(llvm::MemoryBufferRef(data, "vertices"), ctx);
  if (!m)
    FAIL("LLVM: " << llvm::toString(m.takeError()));
  runtime::optimiseForHost(**m);
  std::string text;
  llvm::raw_string_ostream os(text);
  (*m)->print(os, nullptr);
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
