// Reverse-mode automatic differentiation on the IR (PopART's backward pass).
// appendGradients walks the ops between the variables and a scalar loss in
// reverse and asks each op's gradient rule (OpDef::grad, declared beside the
// op's shape inference in ops_*.cpp) for the gradients of its inputs. The
// rules emit ordinary IR ops, so the backward pass goes through the same
// passes, lowerings and tile mapping as the forward one.
#pragma once
#include "compiler/ir/ir.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace popc::ir {

class GradientBuilder;

// What a gradient rule sees: one forward op, the gradients of its outputs,
// and a builder that appends the backward ops to the graph.
class GradContext {
public:
  GradContext(GradientBuilder &builder, const Op &op) : op(op), b_(builder) {}
  const Op &op;

  // dLoss/d(output i); empty when the loss does not depend on that output.
  std::string outputGrad(size_t i) const;
  // Whether input i needs a gradient (a float tensor computed from a variable).
  bool wantsGrad(size_t i) const;
  // Adds `grad` to input i's gradient (several consumers sum). Ignored when
  // the input wants none.
  void addGrad(size_t i, const std::string &grad);

  const TensorInfo &info(const std::string &tensor) const;
  const TensorInfo &inputInfo(size_t i) const { return info(op.inputs.at(i)); }
  const TensorInfo &outputInfo(size_t i) const { return info(op.outputs.at(i)); }
  int64_t opset() const;
  const Graph &graph() const;

  // Appends `type`(inputs) to the graph on the op's IPU and returns its outputs.
  std::vector<std::string> emitMulti(const std::string &type, std::vector<std::string> inputs, size_t outputs,
                                     Attributes attrs = {});
  std::string emit(const std::string &type, std::vector<std::string> inputs, Attributes attrs = {});
  // Constants: a scalar of `dtype`, an int64 vector.
  std::string scalar(double value, DType dtype);
  std::string ints(const std::vector<int64_t> &values);
  // Common shapes of backward code, written once for every opset.
  std::string reshape(const std::string &x, const Shape &shape);
  std::string reduceSum(const std::string &x, const std::vector<int64_t> &axes, bool keepDims);
  std::string transpose(const std::string &x, const std::vector<int64_t> &perm);
  // Elements [begin, end) of `axis` (step 1).
  std::string slice(const std::string &x, int64_t axis, int64_t begin, int64_t end);
  // x broadcast to `shape`.
  std::string expand(const std::string &x, const Shape &shape);
  // A tensor of `info` filled with `value`.
  std::string filled(double value, const TensorInfo &info);
  // Sums a broadcast gradient back to `shape` (numpy broadcasting undone).
  std::string sumToShape(const std::string &grad, const Shape &shape);
  // Where x equals `extreme` (its max or min over `axes`, broadcast to x's
  // shape): 1 / (the number of such elements in its group), else 0. The
  // share of a max/min reduction's gradient each element gets (as torch.amax).
  std::string extremeShare(const std::string &x, const std::string &extreme, const std::vector<int64_t> &axes);
  // Refuses the op: "<Op> '<name>': no gradient: <why>".
  [[noreturn]] void unsupported(const std::string &why) const;

private:
  GradientBuilder &b_;
};

using GradFn = std::function<void(GradContext &)>;

struct GradientOptions {
  std::string loss;                 // scalar float tensor to minimise
  std::vector<std::string> wrt;     // variables (or constants) to differentiate for
  double seed = 1.0;                // dLoss/dLoss (the loss scaling factor)
  // ONNX's Gradient op: the "loss" may be any float tensor (seeded with a
  // tensor of `seed`), and one that depends on none of `wrt` gives zeros.
  bool anyLossShape = false;
  bool zeroForUnreachable = false;
};

// Appends the backward ops to `graph` and returns, for each tensor of `wrt`,
// the name of its gradient (same type and shape). Throws popc::Error naming the
// loss when it is not a scalar or depends on none of `wrt` (unless the options
// allow it), and naming the op when one on the path has no gradient rule.
std::map<std::string, std::string> appendGradients(Graph &graph, const GradientOptions &options);

} // namespace popc::ir
