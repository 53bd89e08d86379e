// popc graph API: poplin — matrix multiplication planned over the tiles by
// the same planner (compiler/lib/matmul.cpp) the ONNX path uses.
#pragma once
#include "popc/Graph.hpp"
#include "popc/Program.hpp"

#include <string>

namespace popc::api::poplin {

// [m,k] x [k,n] -> [m,n]; also batched [b,m,k] x [b,k,n] and matrix-vector
// ([m,k] x [k] -> [m]) with numpy matmul rules.
Tensor matMul(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
// c += alpha * a x b
void matMulAcc(Graph &g, const Tensor &c, float alpha, const Tensor &a, const Tensor &b, program::Sequence &prog,
               const std::string &name = "");

inline void addCodelets(Graph &) {}

} // namespace popc::api::poplin
