// Data-movement ops whose output elements are input elements at indices known at
// compile time (Slice, Pad, Tile, Expand, Split, Gather with constant indices, ...:
// semantics in index_map.cpp), and shape-only ops folded at compile time (Shape,
// Size, ConstantOfShape, Range, EyeLike).
#include "compiler/ir/host_eval.h"
#include "compiler/ir/index_map.h"
#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

#include <algorithm>
#include <cmath>

namespace popc::ir::detail {

namespace {

std::vector<TensorInfo> inferMovement(const Op &op, const Graph &graph) {
  return resolveMovement(op, graph, false).outputs;
}

std::vector<TensorInfo> inferShape(const Op &op, const Graph &graph) {
  const int64_t r = int64_t(inputInfo(op, graph, 0).shape.size());
  auto clampAxis = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + r : v, 0, r); };
  const int64_t start = clampAxis(op.attrs.getInt("start", 0));
  const int64_t end = clampAxis(op.attrs.getInt("end", r));
  return {TensorInfo{DType::I64, {std::max<int64_t>(end - start, 0)}}};
}

std::vector<TensorInfo> inferSize(const Op &op, const Graph &graph) {
  inputInfo(op, graph, 0);
  return {TensorInfo{DType::I64, {}}};
}

std::vector<TensorInfo> inferConstantOfShape(const Op &op, const Graph &graph) {
  const auto dims = constantInputInts(op, graph, 0, "shape");
  for (int64_t d : dims)
    if (d < 0)
      failOp(op, "shape {} has a negative dimension", shapeToString(dims));
  checkTensorSize(op, dims);
  DType dtype = DType::F32;
  if (op.attrs.has("value")) {
    auto v = op.attrs.getTensor("value");
    if (!v || v->info.elements() != 1)
      failOp(op, "attribute 'value' must hold one element");
    dtype = v->info.dtype;
  }
  return {TensorInfo{dtype, dims}};
}

std::vector<TensorInfo> inferRange(const Op &op, const Graph &graph) {
  const DType dtype = inputInfo(op, graph, 0).dtype;
  double v[3];
  for (size_t i = 0; i < 3; ++i) {
    const TensorInfo &info = inputInfo(op, graph, i);
    if (info.dtype != dtype || info.elements() != 1)
      failOp(op, "start, limit and delta must be scalars of one type, input {} is {} {}", i,
             dtypeName(info.dtype), shapeToString(info.shape));
    auto c = constantValue(graph, op.inputs[i]);
    if (!c)
      failNotConstant(op, graph, i, i == 0 ? "start" : i == 1 ? "limit" : "delta");
    v[i] = c->toDoubles()[0];
  }
  if (v[2] == 0)
    failOp(op, "delta must not be 0");
  const double count = std::ceil((v[1] - v[0]) / v[2]);
  if (!(count < 4294967296.0)) // also NaN
    failOp(op, "start {}, limit {}, delta {} give too many elements", v[0], v[1], v[2]);
  const int64_t n = std::max<int64_t>(int64_t(count), 0);
  return {TensorInfo{dtype, {n}}};
}

std::vector<TensorInfo> inferEyeLike(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  requireRank(op, x, 2, "input");
  DType dtype = x.dtype;
  if (op.attrs.has("dtype")) {
    static const std::map<int64_t, DType> onnxTypes = {
        {1, DType::F32}, {2, DType::U8},   {3, DType::I8},   {4, DType::U16},  {5, DType::I16}, {12, DType::U32}, {13, DType::U64},
        {6, DType::I32}, {7, DType::I64},  {9, DType::Bool}, {10, DType::F16}, {11, DType::F64}, {16, DType::BF16}};
    auto it = onnxTypes.find(op.attrs.getInt("dtype"));
    if (it == onnxTypes.end())
      failOp(op, "attribute 'dtype' {} is not a supported tensor type", op.attrs.getInt("dtype"));
    dtype = it->second;
  }
  return {TensorInfo{dtype, x.shape}};
}

} // namespace

void registerMovementOps(OpRegistry &reg) {
  reg.add({"Slice", 1, 5, inferMovement});
  reg.add({"Split", 1, 2, inferMovement});
  reg.add({"Pad", 1, 4, inferMovement});
  reg.add({"Tile", 2, 2, inferMovement});
  reg.add({"Expand", 2, 2, inferMovement});
  reg.add({"Gather", 2, 2, inferMovement});
  reg.add({"GatherElements", 2, 2, inferMovement});
  reg.add({"GatherND", 2, 2, inferMovement});
  reg.add({"DepthToSpace", 1, 1, inferMovement});
  reg.add({"SpaceToDepth", 1, 1, inferMovement});
  reg.add({"Trilu", 1, 2, inferMovement});
  reg.add({"Compress", 2, 2, inferMovement});
  reg.add({"ReverseSequence", 2, 2, inferMovement});
  reg.add({"Resize", 1, 4, inferMovement});
  reg.add({"Upsample", 1, 2, inferMovement});
  reg.add({"Shape", 1, 1, inferShape});
  reg.add({"Size", 1, 1, inferSize});
  reg.add({"ConstantOfShape", 1, 1, inferConstantOfShape});
  reg.add({"Range", 3, 3, inferRange});
  reg.add({"EyeLike", 1, 1, inferEyeLike});
}

} // namespace popc::ir::detail
