// popc graph API: popops — elementwise maps, reductions, fill and cast,
// built by the same lowerings (compiler/lib) the ONNX path uses. Each call
// appends its steps to `prog` and returns a new tensor (in-place variants
// write their first operand).
#pragma once
#include "popc/Graph.hpp"
#include "popc/Program.hpp"

#include <string>
#include <vector>

namespace popc::api::popops {

// Any elementwise operator of the vertex library by its ONNX name ("Add",
// "Mul", "Exp", "Less", "Where", ...), numpy broadcasting, optional params
// (e.g. LeakyRelu alpha).
Tensor map(Graph &graph, const std::string &op, const std::vector<Tensor> &inputs, program::Sequence &prog,
           const std::string &name = "", const std::vector<double> &params = {});

Tensor add(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor sub(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor mul(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor div(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor pow(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor max(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor min(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor lt(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor gt(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor eq(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
Tensor neg(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name = "");
Tensor abs(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name = "");
Tensor exp(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name = "");
Tensor log(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name = "");
Tensor sqrt(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name = "");
Tensor square(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name = "");
Tensor logicalNot(Graph &g, const Tensor &a, program::Sequence &prog, const std::string &name = "");

// a += b; a += scale * b (scale a host constant).
void addInPlace(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
void subInPlace(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
void mulInPlace(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name = "");
void scaledAddTo(Graph &g, const Tensor &a, const Tensor &b, float scale, program::Sequence &prog,
                 const std::string &name = "");

enum class Operation { ADD, MUL, MAX, MIN, SQUARE_ADD, MEAN };
// Reduces the listed dimensions away (the result keeps the others, in order).
Tensor reduce(Graph &g, const Tensor &in, const std::vector<std::size_t> &dims, Operation op,
              program::Sequence &prog, const std::string &name = "");

// Every element of t = value.
void fill(Graph &g, const Tensor &t, double value, program::Sequence &prog, const std::string &name = "");
void zero(Graph &g, const Tensor &t, program::Sequence &prog, const std::string &name = "");
Tensor cast(Graph &g, const Tensor &in, Type to, program::Sequence &prog, const std::string &name = "");

// popops::addCodelets(graph): nothing to load (vertex code is generated); kept for the guide's programs.
inline void addCodelets(Graph &) {}

} // namespace popc::api::popops
