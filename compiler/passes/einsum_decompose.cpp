// Einsum decomposition: an Einsum becomes the ops numpy's einsum amounts to
// for two operands at a time, so it reuses the tiled MatMul lowering:
// repeated indices within an operand (diagonals) are a Mul by an identity
// mask and a ReduceSum; indices no later operand or the output needs are
// summed first; the rest is Transpose to [batch, kept, contracted], Reshape
// to 3-D, MatMul, Reshape back. Operands fold left to right; a last
// ReduceSum/Transpose gives the output order.
#include "compiler/ir/einsum.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace popc::passes {

namespace {

struct Operand {
  std::string tensor;
  std::string indices; // one per axis
};

class EinsumBuilder {
public:
  EinsumBuilder(ir::Graph &g, size_t at, const ir::Op &op, const ir::EinsumSpec &spec, DType dtype)
      : g_(g), ops_(g, at, op.name, op.ipu), name_(op.name), spec_(spec), dtype_(dtype) {}

  // Sums away every repeated index of `x` but its first occurrence, keeping
  // the diagonal: x * eye (broadcast over the other axes), then ReduceSum.
  Operand diagonals(Operand x) {
    for (size_t q = 1; q < x.indices.size(); ++q) {
      const size_t p = x.indices.find(x.indices[q]);
      if (p == q)
        continue;
      const int64_t n = spec_.dims.at(x.indices[q]);
      Shape maskShape(x.indices.size(), 1);
      maskShape[p] = maskShape[q] = n;
      std::vector<double> eye(size_t(n * n), 0.0);
      for (int64_t i = 0; i < n; ++i)
        eye[size_t(i * n + i)] = 1.0;
      const std::string mask = addFloatConstant(g_, name_ + "_diagonal", dtype_, maskShape, eye);
      x.tensor = reduce(ops_.add("Mul", {x.tensor, mask}), {int64_t(q)});
      x.indices.erase(q, 1);
      --q;
    }
    return x;
  }

  // Sums the indices of `x` that are not in `keep`.
  Operand sumExcept(Operand x, const std::set<char> &keep) {
    std::vector<int64_t> axes;
    std::string left;
    for (size_t a = 0; a < x.indices.size(); ++a)
      if (keep.count(x.indices[a]))
        left += x.indices[a];
      else
        axes.push_back(int64_t(a));
    if (!axes.empty())
      x = {reduce(x.tensor, axes), left};
    return x;
  }

  Operand permute(Operand x, const std::string &order) {
    if (x.indices == order)
      return x;
    std::vector<int64_t> perm;
    for (char c : order)
      perm.push_back(int64_t(x.indices.find(c)));
    ir::Attributes attrs;
    attrs.set("perm", perm);
    return {ops_.add("Transpose", {x.tensor}, "", attrs), order};
  }

  std::string reshape(const std::string &x, const Shape &shape) {
    std::vector<uint8_t> data(shape.size() * sizeof(int64_t));
    if (!data.empty())
      std::memcpy(data.data(), shape.data(), data.size());
    const std::string s = addConstant(g_, name_ + "_shape", {DType::I64, {int64_t(shape.size())}}, data);
    return ops_.add("Reshape", {x, s});
  }

  int64_t product(const std::string &indices) const {
    int64_t p = 1;
    for (char c : indices)
      p *= spec_.dims.at(c);
    return p;
  }
  Shape dimsOf(const std::string &indices) const {
    Shape s;
    for (char c : indices)
      s.push_back(spec_.dims.at(c));
    return s;
  }

  // a (x) b over their shared indices; `later` holds the indices still needed.
  Operand contract(Operand a, Operand b, const std::set<char> &later) {
    std::set<char> keepA(later.begin(), later.end()), keepB(later.begin(), later.end());
    keepA.insert(b.indices.begin(), b.indices.end());
    keepB.insert(a.indices.begin(), a.indices.end());
    a = sumExcept(a, keepA);
    b = sumExcept(b, keepB);
    std::string batch, contracted, onlyA, onlyB;
    for (char c : a.indices)
      (b.indices.find(c) == std::string::npos ? onlyA : later.count(c) ? batch : contracted) += c;
    for (char c : b.indices)
      if (a.indices.find(c) == std::string::npos)
        onlyB += c;
    a = permute(a, batch + onlyA + contracted);
    b = permute(b, batch + contracted + onlyB);
    const std::string a3 = reshape(a.tensor, {product(batch), product(onlyA), product(contracted)});
    const std::string b3 = reshape(b.tensor, {product(batch), product(contracted), product(onlyB)});
    const std::string indices = batch + onlyA + onlyB;
    return {reshape(ops_.add("MatMul", {a3, b3}), dimsOf(indices)), indices};
  }

  void finish(Operand x, const std::string &output) {
    x = sumExcept(x, std::set<char>(spec_.output.begin(), spec_.output.end()));
    x = permute(x, spec_.output);
    ops_.add("Identity", {x.tensor}, output);
  }

private:
  std::string reduce(const std::string &x, const std::vector<int64_t> &axes) {
    return ops_.reduce("ReduceSum", x, axes, false);
  }

  ir::Graph &g_;
  OpInserter ops_;
  std::string name_;
  const ir::EinsumSpec &spec_;
  DType dtype_;
};

} // namespace

size_t decomposeEinsum(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  const std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t count = 0;
  for (size_t i = 0; i < g.ops().size(); ++i) {
    if (g.ops()[i]->type != "Einsum" || !isOnnxOp(*g.ops()[i]))
      continue;
    const ir::Op op = *g.ops()[i];
    const ir::EinsumSpec spec = ir::parseEinsum(op, g);
    const DType dtype = g.tensor(op.inputs[0]).info.dtype;
    removeOpAndDeadOutputs(g, i, captured);
    EinsumBuilder b(g, i, op, spec, dtype);
    std::vector<Operand> operands;
    for (size_t k = 0; k < op.inputs.size(); ++k)
      operands.push_back(b.diagonals({op.inputs[k], spec.inputs[k]}));
    Operand acc = operands[0];
    for (size_t k = 1; k < operands.size(); ++k) {
      std::set<char> later(spec.output.begin(), spec.output.end());
      for (size_t j = k + 1; j < operands.size(); ++j)
        later.insert(operands[j].indices.begin(), operands[j].indices.end());
      acc = b.contract(acc, operands[k], later);
    }
    b.finish(acc, op.outputs[0]);
    ++count;
  }
  return count;
}

} // namespace popc::passes
