// Shape-manipulating ops and Constant.
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <algorithm>

namespace popc::ir::detail {

namespace {
std::vector<TensorInfo> inferFlatten(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const int64_t axis = flattenAxis(op, graph);
  int64_t outer = 1, inner = 1;
  for (size_t i = 0; i < x.shape.size(); ++i)
    (int64_t(i) < axis ? outer : inner) *= x.shape[i];
  return {TensorInfo{x.dtype, {outer, inner}}};
}

std::vector<TensorInfo> inferReshape(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (op.attrs.has("shape"))
    failOp(op, "legacy (opset < 5) 'shape' attribute is not supported");
  const std::vector<int64_t> spec = constantInputInts(op, graph, 1, "shape");
  const bool allowZero = op.attrs.getInt("allowzero", 0) != 0;
  Shape out(spec.size());
  int64_t inferIndex = -1, known = 1;
  for (size_t i = 0; i < spec.size(); ++i) {
    int64_t d = spec[i];
    if (d == -1) {
      if (inferIndex >= 0)
        failOp(op, "shape {} has more than one -1", shapeToString(spec));
      inferIndex = int64_t(i);
      continue;
    }
    if (d == 0 && !allowZero) { // 0 copies the input dim
      if (i >= x.shape.size())
        failOp(op, "shape {} has 0 at position {} but the input {} has rank {}",
               shapeToString(spec), i, shapeToString(x.shape), x.shape.size());
      d = x.shape[i];
    } else if (d < 0) {
      failOp(op, "shape {} has invalid value {}", shapeToString(spec), d);
    }
    out[i] = d;
    known *= d;
  }
  if (allowZero && inferIndex >= 0 && std::count(spec.begin(), spec.end(), 0) > 0)
    failOp(op, "shape {} has both 0 and -1 with allowzero=1", shapeToString(spec));
  const int64_t total = x.elements();
  if (inferIndex >= 0) {
    if (known == 0 || total % known != 0)
      failOp(op, "cannot reshape input {} ({} elements) to {}", shapeToString(x.shape), total,
             shapeToString(spec));
    out[size_t(inferIndex)] = total / known;
  } else if (known != total) {
    failOp(op, "cannot reshape input {} ({} elements) to {} ({} elements)", shapeToString(x.shape),
           total, shapeToString(out), known);
  }
  return {TensorInfo{x.dtype, out}};
}

std::vector<TensorInfo> inferTranspose(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const auto perm = transposePerm(op, graph);
  Shape out(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    out[i] = x.shape[size_t(perm[i])];
  return {TensorInfo{x.dtype, out}};
}

std::vector<TensorInfo> inferConcat(const Op &op, const Graph &graph) {
  const TensorInfo &first = inputInfo(op, graph, 0);
  if (first.shape.empty())
    failOp(op, "cannot concatenate scalars");
  const int64_t axis = concatAxis(op, graph);
  Shape out = first.shape;
  out[size_t(axis)] = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const TensorInfo &t = inputInfo(op, graph, i);
    if (t.dtype != first.dtype)
      failOp(op, "input {} has type {}, input 0 has {}", i, dtypeName(t.dtype),
             dtypeName(first.dtype));
    bool ok = t.shape.size() == first.shape.size();
    for (size_t d = 0; ok && d < t.shape.size(); ++d)
      ok = int64_t(d) == axis || t.shape[d] == first.shape[d];
    if (!ok)
      failOp(op, "input {} {} does not match input 0 {} outside axis {}", i,
             shapeToString(t.shape), shapeToString(first.shape), axis);
    out[size_t(axis)] += t.shape[size_t(axis)];
  }
  return {TensorInfo{first.dtype, out}};
}

std::vector<TensorInfo> inferConstant(const Op &op, const Graph &) {
  return {constantOpTensor(op).info};
}

std::vector<TensorInfo> inferSqueeze(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const auto axes = squeezeAxes(op, graph);
  Shape out;
  for (size_t i = 0; i < x.shape.size(); ++i)
    if (!std::binary_search(axes.begin(), axes.end(), int64_t(i)))
      out.push_back(x.shape[i]);
  return {TensorInfo{x.dtype, out}};
}

std::vector<TensorInfo> inferUnsqueeze(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  const auto axes = unsqueezeAxes(op, graph);
  Shape out;
  size_t next = 0;
  for (size_t i = 0; i < x.shape.size() + axes.size(); ++i)
    out.push_back(std::binary_search(axes.begin(), axes.end(), int64_t(i)) ? 1 : x.shape[next++]);
  return {TensorInfo{x.dtype, out}};
}

// Gradient rules (autodiff.h).

// Ops that only relabel the elements: the gradient is g in X's shape.
void gradReshapeLike(GradContext &c) {
  if (c.wantsGrad(0))
    c.addGrad(0, c.reshape(c.outputGrad(0), c.inputInfo(0).shape));
}

void gradTranspose(GradContext &c) {
  if (!c.wantsGrad(0))
    return;
  const std::vector<int64_t> perm = transposePerm(c.op, c.graph());
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[size_t(perm[i])] = int64_t(i);
  c.addGrad(0, c.transpose(c.outputGrad(0), inverse));
}

void gradConcat(GradContext &c) { // each input's slice of g along the axis
  const int64_t axis = concatAxis(c.op, c.graph());
  int64_t begin = 0;
  for (size_t i = 0; i < c.op.inputs.size(); ++i) {
    const int64_t end = begin + c.inputInfo(i).shape[size_t(axis)];
    if (c.wantsGrad(i))
      c.addGrad(i, c.slice(c.outputGrad(0), axis, begin, end));
    begin = end;
  }
}

} // namespace

void registerShapeOps(OpRegistry &reg) {
  reg.add({"Flatten", 1, 1, inferFlatten, gradReshapeLike});
  reg.add({"Reshape", 2, 2, inferReshape, gradReshapeLike});
  reg.add({"Transpose", 1, 1, inferTranspose, gradTranspose});
  reg.add({"Concat", 1, kVariadic, inferConcat, gradConcat});
  reg.add({"Constant", 0, 0, inferConstant});
  reg.add({"Squeeze", 1, 2, inferSqueeze, gradReshapeLike});
  reg.add({"Unsqueeze", 1, 2, inferUnsqueeze, gradReshapeLike});
}

} // namespace popc::ir::detail
