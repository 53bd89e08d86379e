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


// Gradient rules (autodiff.h).

void gradExpand(GradContext &c) {
  if (c.wantsGrad(0))
    c.addGrad(0, c.sumToShape(c.outputGrad(0), c.inputInfo(0).shape));
}

// Gathered elements send their gradient back to where they came from; an
// element gathered twice gets both (ScatterElements with reduction add).
void gradGatherElements(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  Attributes a;
  a.set("axis", c.op.attrs.getInt("axis", 0));
  a.set("reduction", std::string("add"));
  c.addGrad(0, c.emit("ScatterElements", {c.filled(0.0, c.inputInfo(0)), c.op.inputs[1], c.outputGrad(0)}, a));
}

// Gather along axis 0 of a table (an embedding): each index's row of g is added
// into its row of the table's gradient.
void gradGather(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  const Shape &data = c.inputInfo(0).shape;
  if (data.empty() || (c.op.attrs.getInt("axis", 0) != 0 && c.op.attrs.getInt("axis", 0) != -int64_t(data.size())))
    c.unsupported("only Gather along axis 0 (an embedding lookup) has a gradient rule");
  int64_t row = 1;
  for (size_t i = 1; i < data.size(); ++i)
    row *= data[i];
  const int64_t n = c.inputInfo(1).elements();
  Attributes to;
  to.set("to", onnxElementType(DType::I64));
  const std::string idx = c.expand(c.reshape(c.emit("Cast", {c.op.inputs[1]}, to), {n, 1}), {n, row});
  Attributes a;
  a.set("axis", int64_t(0));
  a.set("reduction", std::string("add"));
  const std::string rows = c.reshape(c.outputGrad(0), {n, row});
  const std::string table = c.filled(0.0, TensorInfo{c.inputInfo(0).dtype, {data[0], row}});
  c.addGrad(0, c.reshape(c.emit("ScatterElements", {table, idx, rows}, a), data));
}

// Any op whose element map is known at compile time (Slice, Split, Pad, Tile,
// Gather with constant indices, ...): every output element's gradient goes
// back to the input element it was read from, summed where several read the
// same one: a ScatterElements (add) of g at the map's constant positions.
void gradMovement(GradContext &c) {
  const MovementResult r = resolveMovement(c.op, c.graph(), true);
  if (!r.maps) { // indices known only at run time
    if (c.op.type == "Gather")
      return gradGather(c);
    if (c.op.type == "GatherElements")
      return gradGatherElements(c);
    c.unsupported("its indices are only known at run time");
  }
  if (!c.wantsGrad(0))
    return;
  const TensorInfo &x = c.inputInfo(0);
  for (size_t o = 0; o < c.op.outputs.size(); ++o) {
    const std::string g = c.outputGrad(o);
    const IndexMap &map = (*r.maps)[o];
    if (g.empty() || map.input != 0)
      continue;
    const int64_t n = c.outputInfo(o).elements();
    std::vector<int64_t> from, to; // output element -> input element
    int64_t i = 0;
    forEachSource(map, 0, uint64_t(n), [&](int64_t src) {
      if (src != kFill) {
        from.push_back(i);
        to.push_back(src);
      }
      ++i;
    });
    if (to.empty())
      continue;
    Attributes a;
    a.set("axis", int64_t(0));
    a.set("reduction", std::string("add"));
    // ScatterElements takes at most as many updates as the data has elements:
    // an op that reads elements several times (Tile) scatters in chunks.
    const std::string all = c.reshape(g, {n});
    std::string flat = c.filled(0.0, TensorInfo{x.dtype, {x.elements()}});
    const size_t chunk = size_t(x.elements());
    for (size_t begin = 0; begin < to.size(); begin += chunk) {
      const size_t end = std::min(to.size(), begin + chunk);
      std::string values = all;
      if (end - begin != size_t(n))
        values = c.emit("Gather", {all, c.ints({from.begin() + int64_t(begin), from.begin() + int64_t(end)})});
      flat = c.emit("ScatterElements",
                    {flat, c.ints({to.begin() + int64_t(begin), to.begin() + int64_t(end)}), values}, a);
    }
    c.addGrad(0, c.reshape(flat, x.shape));
  }
}

} // namespace

void registerMovementOps(OpRegistry &reg) {
  reg.add({"Slice", 1, 5, inferMovement, gradMovement});
  reg.add({"Split", 1, 2, inferMovement, gradMovement});
  reg.add({"Pad", 1, 4, inferMovement, gradMovement});
  reg.add({"Tile", 2, 2, inferMovement, gradMovement});
  reg.add({"Expand", 2, 2, inferMovement, gradExpand});
  reg.add({"Gather", 2, 2, inferMovement, gradMovement});
  reg.add({"GatherElements", 2, 2, inferMovement, gradMovement});
  reg.add({"GatherND", 2, 2, inferMovement, gradMovement});
  reg.add({"DepthToSpace", 1, 1, inferMovement, gradMovement});
  reg.add({"SpaceToDepth", 1, 1, inferMovement, gradMovement});
  reg.add({"Trilu", 1, 2, inferMovement, gradMovement});
  reg.add({"Compress", 2, 2, inferMovement, gradMovement});
  reg.add({"ReverseSequence", 2, 2, inferMovement, gradMovement});
  reg.add({"Resize", 1, 4, inferMovement, gradMovement});
  reg.add({"Upsample", 1, 2, inferMovement, gradMovement});
  reg.add({"Shape", 1, 1, inferShape});
  reg.add({"Size", 1, 1, inferSize});
  reg.add({"ConstantOfShape", 1, 1, inferConstantOfShape});
  reg.add({"Range", 3, 3, inferRange});
  reg.add({"EyeLike", 1, 1, inferEyeLike});
}

} // namespace popc::ir::detail
