// Test helper: JIT a vertex module exactly as poprun-lite does (the bitcode
// gate, runtime::Jit's host O3 pipeline, the memory sandbox and its code
// generator) and run one vertex on a fake tile (fields laid out with canary
// gaps, so stray writes are caught).
#pragma once
#include "compiler/ops/elementwise.h"

#include <stdexcept>
#include <string_view>
#include "compiler/codegen/kernels.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace popc::codegen::test {

using Bytes = std::vector<uint8_t>;

class JitModule {
public:
  // The module `codegen` finishes, with its vertex types as the entries.
  explicit JitModule(VertexCodegen &codegen);
  JitModule(const Bytes &bitcode, const std::vector<VertexTypeInfo> &types);
  ~JitModule();
  using VertexFn = void (*)(uint8_t *tileBase, const uint32_t *fieldOffsets);
  VertexFn lookup(const std::string &symbol);

  // Runs `vertex` with the given contents of its memory fields (its
  // immediates are its type's values) (outputs: any bytes of the
  // right size) and returns every field's bytes afterwards. Checks that only
  // Output/InOut fields changed and no byte outside the fields was written.
  // `standIns` (field, stand-in): the field is absent (its bytes are ignored)
  // and gets the stand-in's offset, as the lowering passes optional fields.
  std::vector<Bytes> run(const VertexTypeInfo &vertex, const std::vector<Bytes> &fields,
                         const std::vector<std::pair<uint32_t, uint32_t>> &standIns = {});

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Textual IR of the module after the host O3 pipeline (runtime::optimiseForHost,
// for vectorisation checks).
std::string hostOptimisedIR(const Bytes &bitcode);

template <typename T> Bytes toBytes(const std::vector<T> &v) {
  Bytes b(v.size() * sizeof(T));
  if (!v.empty())
    std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T> std::vector<T> fromBytes(const Bytes &b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

template <typename T> std::vector<T> randomVector(size_t n, std::mt19937 &rng, double lo = -1.0, double hi = 1.0) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto &x : v)
    x = static_cast<T>(dist(rng));
  return v;
}

// |got - want| <= rtol * max(|want|, 1) elementwise (1 stands for the scale of
// the inputs, so sums that cancel to ~0 are not held to a relative bound).
void requireClose(const std::vector<float> &got, const std::vector<double> &want, double rtol = 1e-5);
void requireClose(const std::vector<double> &got, const std::vector<double> &want, double rtol = 1e-12);

// The elementwise kernel of a name (an op or kernel of compiler/ops/elementwise.def).
inline ops::Elementwise kernelOp(std::string_view name) {
  const auto op = ops::elementwiseFromName(name);
  if (!op)
    throw std::invalid_argument("test: no elementwise op " + std::string(name));
  return *op;
}

} // namespace popc::codegen::test
