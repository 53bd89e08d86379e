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

// Integer products (MatMulInteger, ConvInteger) have no AMP path on the IPU
// (poplin has no int8 matmul): one multiply-accumulate per cycle on the
// integer unit, half the f32 dot product's rate.
constexpr uint64_t integerFactor(bool integer) { return integer ? 2 : 1; }

// One dot product of length k: the Graphcore tutorial's vertex, 2 f32 MACs per
// cycle plus loop overhead.
constexpr uint64_t dotProduct(uint64_t k) { return 5 + (k + 1) / 2; }

// MatMul: a dot product per output, plus a cycle per output to add beta*C.
// With half partials the AMP accumulates in float16 at twice the rate: 4 MACs per cycle.
constexpr uint64_t dotProductHalfPartials(uint64_t k) { return 5 + (k + 3) / 4; }
constexpr uint64_t dot(uint64_t k, bool halfPartials) { return halfPartials ? dotProductHalfPartials(k) : dotProduct(k); }

constexpr uint64_t matmul(uint64_t outputs, uint64_t k, bool hasC, bool is64Bit, bool integer = false,
                          bool halfPartials = false) {
  return (kVertexOverhead + outputs * dot(k, halfPartials) + (hasC ? outputs : 0)) * f64Factor(is64Bit) *
         integerFactor(integer);
}

// Conv: a dot product of length inChannels*kernelH*kernelW per output, plus a
// cycle per output for a fused relu.
constexpr uint64_t conv(uint64_t outputs, uint64_t reduction, bool relu, bool is64Bit, bool integer = false,
                        bool halfPartials = false) {
  return (kVertexOverhead + outputs * dot(reduction, halfPartials) + (relu ? outputs : 0)) * f64Factor(is64Bit) *
         integerFactor(integer);
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

// --- the C++ codelet vertices compiler/lib builds (compiler/codelets) ---

// N-d transposed conv: a MAC per kernel tap reaching the output, plus 4 per output.
constexpr uint64_t convTransposeNd(uint64_t outputs, uint64_t macsPerOutput) {
  return kVertexOverhead + outputs * (macsPerOutput + 4);
}
// N-d pooling: one compare/add per window element plus 4 per output.
constexpr uint64_t poolNd(uint64_t outputs, uint64_t window) { return kVertexOverhead + outputs * (window + 4); }
// TopK over `cols` per row: an insertion into the k best per element.
constexpr uint64_t topK(uint64_t rows, uint64_t cols, uint64_t k) {
  return kVertexOverhead + rows * cols * (4 + 2 * k);
}
// OneHot: a row of `depth` per index.
constexpr uint64_t oneHot(uint64_t rows, uint64_t depth) { return kVertexOverhead + rows * (6 + depth); }
// ScatterElements: copy the data, then an index check and store per update.
constexpr uint64_t scatterElements(uint64_t dataElements, uint64_t indices) {
  return kVertexOverhead + 2 * dataElements + 12 * indices;
}
// GatherElements: an index check and load per output.
constexpr uint64_t gatherElements(uint64_t indices) { return kVertexOverhead + 12 * indices; }
// Gather of rows of `inner` elements: per (outer, index) a check and a row copy.
constexpr uint64_t gatherRows(uint64_t outer, uint64_t indices, uint64_t inner) {
  return kVertexOverhead + outer * indices * (6 + inner);
}
// ArgMax/ArgMin: a compare and select per element.
constexpr uint64_t argReduce(uint64_t rows, uint64_t cols) { return kVertexOverhead + rows * (4 + 2 * cols); }
// A row-wise codelet (LpNormalization, Hardmax, ...) at `perElement` cycles per element.
constexpr uint64_t rowWise(uint64_t rows, uint64_t cols, uint64_t perElement) {
  return kVertexOverhead + rows * cols * perElement;
}

} // namespace popc::codegen::cycles
