// popc graph API: popnn — non-linearities, softmax and pooling, from the
// same lowerings (compiler/lib) the ONNX path uses.
#pragma once
#include "popc/Graph.hpp"
#include "popc/Program.hpp"

#include <string>
#include <vector>

namespace popc::api::popnn {

enum class NonLinearityType { RELU, SIGMOID, TANH, SOFTMAX, LOG_SOFTMAX };
// SOFTMAX / LOG_SOFTMAX normalise over the last dimension.
Tensor nonLinearity(Graph &g, NonLinearityType type, const Tensor &t, program::Sequence &prog,
                    const std::string &name = "");
void nonLinearityInPlace(Graph &g, NonLinearityType type, const Tensor &t, program::Sequence &prog,
                         const std::string &name = "");

// 2-D pooling of an NCHW tensor.
struct PoolParams {
  std::vector<std::size_t> kernel = {2, 2};
  std::vector<std::size_t> stride = {2, 2};
  std::vector<std::size_t> padding = {0, 0, 0, 0}; // top, left, bottom, right
};
Tensor maxPool(Graph &g, const Tensor &in, const PoolParams &p, program::Sequence &prog, const std::string &name = "");
Tensor avgPool(Graph &g, const Tensor &in, const PoolParams &p, program::Sequence &prog, const std::string &name = "");

inline void addCodelets(Graph &) {}

} // namespace popc::api::popnn
