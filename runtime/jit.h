// Host JIT for vertex code: LLVM ORC LLJIT targeting the host CPU, modules
// optimised for it (O3's optimisation half) and compiled to machine code in parallel on the
// engine's threads before being added. Only allow-listed libm and memory
// functions are visible to JIT-ed code (no process symbol search).
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace popc::runtime {

class ThreadPool;
struct MemorySandbox;

using VertexFn = void (*)(uint8_t *tileBase, const uint32_t *fieldOffsets);

class Jit {
public:
  // `pool` (not owned, may be null = the calling thread only) compiles the
  // partitions of each module in parallel; it must outlive addModule calls.
  explicit Jit(ThreadPool *pool = nullptr);
  ~Jit();
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  // Optimises `module` (already through the bitcode gate) for the host,
  // compiles it to machine code and adds it. The module is split into
  // partitions of functions that share nothing but copyable constants; each
  // is re-read into its own LLVMContext and optimised and compiled on a pool
  // thread. Every function gets the same host pipeline and code generator as
  // in one whole-module compile, so the machine code does not depend on the
  // number of threads. With `sandbox` (the engine always passes one), each
  // partition's memory accesses are confined after O3 and before codegen
  // (memory_sandbox.h). With an object cache set (object_cache.h), each
  // partition's machine code is looked up first and stored after a compile.
  // Throws popc::Error.
  // `moduleKey` (from moduleCacheKey; empty = none): with an object cache,
  // the list of the partitions' keys is also stored under it, so a later
  // process finds the whole module's machine code without reading its bitcode.
  void addModule(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                 const std::string &where, const MemorySandbox *sandbox = nullptr, const std::string &moduleKey = "");
  // Adds machine code that cachedModuleObjects returned.
  void addObjects(std::vector<std::vector<uint8_t>> objects, const std::string &where);
  // Links (on first lookup) and returns the entry point. Throws popc::Error.
  VertexFn lookup(const std::string &symbol, const std::string &where);

  const std::string &hostCpu() const;
  // Partitions the last addModule compiled (for tests and logs).
  size_t lastPartitions() const;
  // Of those, how many came from the object cache (object_cache.h) instead
  // of the LLVM optimiser and code generator.
  size_t lastCacheHits() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The object cache key of a whole code module as the executable holds it:
// its bytes, the sandbox, the partition count for `threads`, the host CPU,
// LLVM and the build. Bytes that once passed the gate and were compiled under
// this key need neither the gate nor LLVM again.
std::string moduleCacheKey(std::span<const uint8_t> bitcode, const MemorySandbox &sandbox, unsigned threads);
// The machine code of every partition of the module stored under `moduleKey`
// by an earlier addModule, or nullopt (no object cache, or any entry missing).
std::optional<std::vector<std::vector<uint8_t>>> cachedModuleObjects(const std::string &moduleKey);

// The host pipeline addModule runs on each partition, on a whole module
// (for tests that read the optimised IR, e.g. to check vectorisation).
void optimiseForHost(llvm::Module &module);

} // namespace popc::runtime
