// Host JIT for vertex code: LLVM ORC LLJIT targeting the host CPU, modules
// optimised at O3 for it before being added. Only allow-listed libm and
// memory functions are visible to JIT-ed code (no process symbol search).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace popc::runtime {

using VertexFn = void (*)(uint8_t *tileBase, const uint32_t *fieldOffsets);

class Jit {
public:
  Jit();
  ~Jit();
  Jit(const Jit &) = delete;
  Jit &operator=(const Jit &) = delete;

  // Optimises `module` for the host and adds it. Throws popc::Error.
  void addModule(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                 const std::string &where);
  // Compiles (on first lookup) and returns the entry point. Throws popc::Error.
  VertexFn lookup(const std::string &symbol, const std::string &where);

  const std::string &hostCpu() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace popc::runtime
