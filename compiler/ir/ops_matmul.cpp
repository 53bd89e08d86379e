// MatMul (numpy matmul semantics) and Gemm.
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/einsum.h"
#include "compiler/ir/op_helpers.h"

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
} // namespace

void registerMatMulOps(OpRegistry &reg) {
  reg.add({"MatMul", 2, 2, inferMatMul});
  reg.add({"Gemm", 2, 3, inferGemm});
  reg.add({"Einsum", 1, kVariadic, inferEinsum});
}

} // namespace popc::ir::detail
