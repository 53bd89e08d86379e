// poplin on the MatMul lowering (compiler/lib/matmul.cpp and its planner).
#include "popc/poplin.hpp"
#include "popc/popops.hpp"

#include "lower_op.h"

#include "support/error.h"

namespace popc::api::poplin {

Tensor matMul(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &prog, const std::string &name) {
  if (a.elementType() != b.elementType())
    fail("matMul: operands have types {} and {}", typeName(a.elementType()), typeName(b.elementType()));
  detail::OpCall call(g, prog, name, "matMul");
  return call.op("MatMul", {a, b}).at(0);
}

void matMulAcc(Graph &g, const Tensor &c, float alpha, const Tensor &a, const Tensor &b, program::Sequence &prog,
               const std::string &name) {
  Tensor p = matMul(g, a, b, prog, name);
  popops::scaledAddTo(g, c, p, alpha, prog, name.empty() ? "" : name + "/acc");
}

} // namespace popc::api::poplin
