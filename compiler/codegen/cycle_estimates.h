// Cycle estimates of the vertices the code generator emits, in one place (as
// poplibs' PerformanceEstimation.hpp): each kind's describe() charges a vertex
// with them, and the planners (compiler/lib/planner.h) weigh plans with the
// same numbers. Cycles of one worker context; 64-bit types have no vector
// unit and cost twice (f64Factor).
#pragma once
#include <cstdint>

namespace popc::codegen::cycles {

// Call, field loads and loop setup of any vertex.
constexpr uint64_t kVertexOverhead = 10;

constexpr uint64_t f64Factor(bool is64Bit) { return is64Bit ? 2 : 1; }

// One dot product of length k: the Graphcore tutorial's vertex, 2 f32 MACs per
// cycle plus loop overhead.
constexpr uint64_t dotProduct(uint64_t k) { return 5 + (k + 1) / 2; }

// MatMul: a dot product per output, plus a cycle per output to add beta*C.
constexpr uint64_t matmul(uint64_t outputs, uint64_t k, bool hasC, bool is64Bit) {
  return (kVertexOverhead + outputs * dotProduct(k) + (hasC ? outputs : 0)) * f64Factor(is64Bit);
}

// Conv: a dot product of length inChannels*kernelH*kernelW per output, plus a
// cycle per output for a fused relu.
constexpr uint64_t conv(uint64_t outputs, uint64_t reduction, bool relu, bool is64Bit) {
  return (kVertexOverhead + outputs * dotProduct(reduction) + (relu ? outputs : 0)) * f64Factor(is64Bit);
}

// Pooling: one compare/add per window element, a few cycles per output for
// setup and (average) the divide.
constexpr uint64_t pool(uint64_t outputs, uint64_t window, bool is64Bit) {
  return (kVertexOverhead + outputs * (3 + window)) * f64Factor(is64Bit);
}

// Softmax: three passes per row (max 1/elem, exp and sum ~10/elem, scale
// 1/elem), plus a divide or log per row.
constexpr uint64_t softmax(uint64_t rows, uint64_t cols, bool is64Bit) {
  return (kVertexOverhead + rows * (20 + 12 * cols)) * f64Factor(is64Bit);
}

// Copy: 8 bytes per cycle.
constexpr uint64_t copy(uint64_t bytes) { return kVertexOverhead + (bytes + 7) / 8; }

} // namespace popc::codegen::cycles
