// MatMul (numpy matmul semantics) and Gemm.
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/einsum.h"
#include "compiler/ir/op_helpers.h"

#include <numeric>

namespace popc::ir::detail {

namespace {
std::vector<TensorInfo> inferMatMul(const Op &op, const Graph &graph) {
  const TensorInfo &a = inputInfo(op, graph, 0);
  const TensorInfo &b = inputInfo(op, graph, 1);
  requireSameDType(op, a, b, "input A", "input B");
  if (a.dtype == DType::Bool)
    failOp(op, "bool inputs are not supported");
  if (a.shape.empty() || b.shape.empty())
    failOp(op, "inputs must have rank >= 1, got {} and {}", shapeToString(a.shape),
           shapeToString(b.shape));
  // 1-D operands are promoted ([K] → [1,K] for A, [K,1] for B) and the added
  // dim is removed from the result again.
  Shape sa = a.shape, sb = b.shape;
  if (sa.size() == 1)
    sa.insert(sa.begin(), 1);
  if (sb.size() == 1)
    sb.push_back(1);
  const int64_t M = sa[sa.size() - 2], K = sa.back();
  const int64_t K2 = sb[sb.size() - 2], N = sb.back();
  if (K != K2)
    failOp(op, "inner dimensions differ: A {} has K={}, B {} has K={}", shapeToString(a.shape), K,
           shapeToString(b.shape), K2);
  Shape batch;
  try {
    batch = broadcastShapes(Shape(sa.begin(), sa.end() - 2), Shape(sb.begin(), sb.end() - 2));
  } catch (const Error &e) {
    failOp(op, "batch dimensions of A {} and B {} do not broadcast", shapeToString(a.shape),
           shapeToString(b.shape));
  }
  Shape out = batch;
  if (a.shape.size() > 1)
    out.push_back(M);
  if (b.shape.size() > 1)
    out.push_back(N);
  return {TensorInfo{a.dtype, out}};
}

std::vector<TensorInfo> inferGemm(const Op &op, const Graph &graph) {
  const TensorInfo &a = inputInfo(op, graph, 0);
  const TensorInfo &b = inputInfo(op, graph, 1);
  requireSameDType(op, a, b, "input A", "input B");
  if (a.dtype == DType::Bool)
    failOp(op, "bool inputs are not supported");
  GemmParams p = gemmParams(op, graph);
  if (op.hasInput(2)) {
    const TensorInfo &c = inputInfo(op, graph, 2);
    requireSameDType(op, a, c, "input A", "input C");
    // C must broadcast unidirectionally to [M, N].
    Shape target{p.M, p.N};
    bool ok = c.shape.size() <= 2;
    if (ok) {
      try {
        ok = broadcastShapes(c.shape, target) == target;
      } catch (const Error &) {
        ok = false;
      }
    }
    if (!ok)
      failOp(op, "input C {} is not unidirectionally broadcastable to [M,N] = {}",
             shapeToString(c.shape), shapeToString(target));
  } else if (graph.opset < 11) {
    failOp(op, "input C is required before opset 11");
  }
  return {TensorInfo{a.dtype, {p.M, p.N}}};
}

// Einsum: decomposed into Transpose/ReduceSum/MatMul/Reshape by a pass
// (compiler/passes/einsum_decompose.cpp); here only its output.
std::vector<TensorInfo> inferEinsum(const Op &op, const Graph &graph) {
  const DType dtype = inputInfo(op, graph, 0).dtype;
  for (size_t i = 1; i < op.inputs.size(); ++i)
    requireSameDType(op, inputInfo(op, graph, 0), inputInfo(op, graph, i), "input 0", "every other input");
  if (dtype != DType::F32 && dtype != DType::F64)
    failOp(op, "inputs are {}; popc's Einsum takes float32 or float64", dtypeName(dtype));
  const EinsumSpec spec = parseEinsum(op, graph);
  Shape shape;
  for (char c : spec.output)
    shape.push_back(spec.dims.at(c));
  return {TensorInfo{dtype, shape}};
}

// Det and DFT: decomposed into elementwise ops, Gathers and MatMuls by
// compiler/passes/linalg_decompose.cpp; here only their outputs.
std::vector<TensorInfo> inferDet(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input X");
  const size_t r = x.shape.size();
  if (r < 2 || x.shape[r - 1] != x.shape[r - 2])
    failOp(op, "input {} must be [..., n, n]", shapeToString(x.shape));
  if (x.shape[r - 1] > 4)
    failOp(op, "{}x{} matrices: popc's Det takes matrices up to 4x4", x.shape[r - 1], x.shape[r - 1]);
  return {TensorInfo{x.dtype, Shape(x.shape.begin(), x.shape.end() - 2)}};
}

std::vector<TensorInfo> inferDft(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "input");
  const int64_t r = int64_t(x.shape.size());
  if (r < 3 || (x.shape.back() != 1 && x.shape.back() != 2))
    failOp(op, "input {} must be [batch, signal..., 1 (real) or 2 (complex)]", shapeToString(x.shape));
  int64_t axis = op.attrs.getInt("axis", 1);
  if (axis < 0)
    axis += r;
  if (axis < 1 || axis > r - 2)
    failOp(op, "axis {} is not a signal axis of input {}", op.attrs.getInt("axis", 1), shapeToString(x.shape));
  int64_t n = x.shape[size_t(axis)];
  if (op.hasInput(1)) {
    const std::vector<int64_t> length = constantInputInts(op, graph, 1, "dft_length");
    if (length.size() != 1 || length[0] < 1)
      failOp(op, "dft_length must be one positive integer");
    n = length[0];
  }
  Shape out = x.shape;
  out[size_t(axis)] = op.attrs.getInt("onesided", 0) ? n / 2 + 1 : n;
  out.back() = 2;
  return {TensorInfo{x.dtype, out}};
}

std::vector<TensorInfo> inferStft(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireFloat(op, x, "signal");
  if (x.shape.size() != 3 || (x.shape[2] != 1 && x.shape[2] != 2))
    failOp(op, "signal {} must be [batch, length, 1 (real) or 2 (complex)]", shapeToString(x.shape));
  const std::vector<int64_t> step = constantInputInts(op, graph, 1, "frame_step");
  int64_t length = 0;
  if (op.hasInput(2))
    length = inputInfo(op, graph, 2).shape.empty() ? 0 : inputInfo(op, graph, 2).shape[0];
  if (op.hasInput(3))
    length = constantInputInts(op, graph, 3, "frame_length").at(0);
  if (step.size() != 1 || step[0] < 1 || length < 1 || length > x.shape[1])
    failOp(op, "needs frame_step >= 1 and a frame_length (or window) of 1 to {} samples", x.shape[1]);
  const int64_t frames = (x.shape[1] - length) / step[0] + 1;
  const int64_t bins = op.attrs.getInt("onesided", 1) ? length / 2 + 1 : length;
  return {TensorInfo{x.dtype, {x.shape[0], frames, bins, 2}}};
}

std::vector<TensorInfo> inferMelWeightMatrix(const Op &op, const Graph &graph) {
  const int64_t bins = constantInputInts(op, graph, 0, "num_mel_bins").at(0);
  const int64_t length = constantInputInts(op, graph, 1, "dft_length").at(0);
  for (size_t i : {2, 3, 4})
    if (graph.tensor(op.inputs[i]).kind != TensorKind::Constant)
      failNotConstant(op, graph, i, "sample_rate and the edge frequencies");
  if (bins < 1 || length < 1)
    failOp(op, "num_mel_bins and dft_length must be positive");
  const int64_t dtype = op.attrs.getInt("output_datatype", 1);
  if (dtype != 1 && dtype != 11)
    failOp(op, "output_datatype {}: popc makes float (1) or double (11)", dtype);
  return {TensorInfo{dtype == 1 ? DType::F32 : DType::F64, {length / 2 + 1, bins}}};
}

// Gradient rules (autodiff.h).

std::string swapLastAxes(GradContext &c, const std::string &x) {
  std::vector<int64_t> perm(c.info(x).shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[perm.size() - 2], perm[perm.size() - 1]);
  return c.transpose(x, perm);
}

// Y = A B (numpy matmul): dA = g B^T, dB = A^T g, summed over broadcast batch
// dims. Vectors are promoted to matrices ([K] -> [1,K] or [K,1]) first.
void gradMatMul(GradContext &c) {
  const Shape &a = c.inputInfo(0).shape, &b = c.inputInfo(1).shape;
  const Shape ap = a.size() == 1 ? Shape{1, a[0]} : a;
  const Shape bp = b.size() == 1 ? Shape{b[0], 1} : b;
  Shape yp = broadcastShapes(Shape(ap.begin(), ap.end() - 2), Shape(bp.begin(), bp.end() - 2));
  yp.push_back(ap[ap.size() - 2]);
  yp.push_back(bp.back());
  const std::string g = c.reshape(c.outputGrad(0), yp);
  const std::string A = c.reshape(c.op.inputs[0], ap), B = c.reshape(c.op.inputs[1], bp);
  if (c.wantsGrad(0))
    c.addGrad(0, c.reshape(c.sumToShape(c.emit("MatMul", {g, swapLastAxes(c, B)}), ap), a));
  if (c.wantsGrad(1))
    c.addGrad(1, c.reshape(c.sumToShape(c.emit("MatMul", {swapLastAxes(c, A), g}), bp), b));
}

// Y = alpha A' B' + beta C with A' = transA ? A^T : A (and B'): the gradients
// are Gemms again, their transposes chosen so no Transpose op is needed.
void gradGemm(GradContext &c) {
  const GemmParams p = gemmParams(c.op, c.graph());
  const std::string g = c.outputGrad(0), &A = c.op.inputs[0], &B = c.op.inputs[1];
  auto gemm = [&](const std::string &x, const std::string &y, bool tx, bool ty) {
    Attributes a;
    a.set("alpha", p.alpha);
    a.set("transA", int64_t(tx));
    a.set("transB", int64_t(ty));
    return c.emit("Gemm", {x, y}, a);
  };
  if (c.wantsGrad(0)) // dA' = g B'^T; dA = transA ? B' g^T : dA'
    c.addGrad(0, p.transA ? gemm(B, g, p.transB, true) : gemm(g, B, false, !p.transB));
  if (c.wantsGrad(1)) // dB' = A'^T g; dB = transB ? g^T A' : dB'
    c.addGrad(1, p.transB ? gemm(g, A, true, p.transA) : gemm(A, g, !p.transA, false));
  if (c.wantsGrad(2)) {
    std::string gc = g;
    if (p.beta != 1.0)
      gc = c.emit("Mul", {g, c.scalar(p.beta, c.outputInfo(0).dtype)});
    c.addGrad(2, c.sumToShape(gc, c.inputInfo(2).shape));
  }
}

} // namespace

void registerMatMulOps(OpRegistry &reg) {
  reg.add({"MatMul", 2, 2, inferMatMul, gradMatMul});
  reg.add({"Gemm", 2, 3, inferGemm, gradGemm});
  reg.add({"Einsum", 1, kVariadic, inferEinsum});
  reg.add({"Det", 1, 1, inferDet});
  reg.add({"DFT", 1, 2, inferDft});
  reg.add({"STFT", 2, 4, inferStft});
  reg.add({"MelWeightMatrix", 5, 5, inferMelWeightMatrix});
}

} // namespace popc::ir::detail
