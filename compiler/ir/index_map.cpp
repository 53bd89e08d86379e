#include "compiler/ir/index_map.h"

#include "compiler/ir/host_eval.h"
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>

namespace popc::ir {

using detail::failOp;
using detail::inputInfo;

namespace {

std::vector<int64_t> strides(const Shape &s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;)
    st[d - 1] = st[d] * s[d];
  return st;
}

// Table i -> (first + i*step) * stride.
std::vector<int64_t> affine(int64_t n, int64_t first, int64_t step, int64_t stride) {
  std::vector<int64_t> t(size_t(std::max<int64_t>(n, 0)));
  for (int64_t i = 0; i < n; ++i)
    t[size_t(i)] = (first + i * step) * stride;
  return t;
}

// Identity map of `in` (each output element is the same input element).
IndexMap identityMap(const Shape &shape, size_t input = 0) {
  IndexMap m;
  m.input = input;
  m.walk = shape;
  const auto st = strides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    m.table.push_back(affine(shape[d], 0, 1, st[d]));
  return m;
}

// A map over the flat output whose table is given per element.
IndexMap explicitMap(std::vector<int64_t> src, size_t input = 0) {
  IndexMap m;
  m.input = input;
  m.walk = {int64_t(src.size())};
  m.table.push_back(std::move(src));
  return m;
}

// Input i as integers when it is known at compile time (nullopt otherwise).
std::optional<std::vector<int64_t>> optionalInts(const Op &op, const Graph &g, size_t i) {
  if (!op.hasInput(i))
    return std::nullopt;
  auto v = constantValue(g, op.inputs[i]);
  if (!v)
    return std::nullopt;
  if (!detail::isInteger(v->info.dtype) && v->info.dtype != DType::Bool)
    failOp(op, "input {} '{}' must be an integer tensor, got {}", i, op.inputs[i], dtypeName(v->info.dtype));
  return v->toInt64s();
}

// Values of an optional 1-D int input (opset >= 10 style) or attribute.
std::optional<std::vector<int64_t>> intsInputOrAttr(const Op &op, const Graph &g, size_t i,
                                                     const char *name, bool fromInput) {
  if (fromInput) {
    if (!op.hasInput(i))
      return std::nullopt;
    return detail::constantInputInts(op, g, i, name);
  }
  if (!op.attrs.has(name))
    return std::nullopt;
  return op.attrs.getInts(name);
}

// One element of `dtype` holding `value`.
std::vector<uint8_t> scalarBytes(DType dtype, double value) {
  return encodeDoubles(dtype, std::vector<double>{value});
}

struct Ctx {
  const Op &op;
  const Graph &g;
  bool wantMaps;
  MovementResult r;
  void out(TensorInfo info) { r.outputs.push_back(std::move(info)); }
  void maps(std::vector<IndexMap> m) {
    if (wantMaps)
      r.maps = std::move(m);
  }
};

// ---------------------------------------------------------------- Slice

void slice(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const int64_t rank = int64_t(x.shape.size());
  const bool inputs = c.g.opset >= 10;
  if (!inputs && op.inputs.size() > 1)
    failOp(op, "takes 1 input before opset 10 (starts/ends/axes are attributes), got {}", op.inputs.size());
  auto starts = intsInputOrAttr(op, c.g, 1, "starts", inputs);
  auto ends = intsInputOrAttr(op, c.g, 2, "ends", inputs);
  if (!starts || !ends)
    failOp(op, "starts and ends are required");
  auto axes = intsInputOrAttr(op, c.g, 3, "axes", inputs);
  auto steps = inputs ? intsInputOrAttr(op, c.g, 4, "steps", true) : std::nullopt;
  const size_t n = starts->size();
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < n; ++i)
      axes->push_back(int64_t(i));
  }
  if (!steps)
    steps.emplace(n, 1);
  if (ends->size() != n || axes->size() != n || steps->size() != n)
    failOp(op, "starts ({}), ends ({}), axes ({}) and steps ({}) must have the same length", n,
           ends->size(), axes->size(), steps->size());
  std::vector<int64_t> first(size_t(rank), 0), step(size_t(rank), 1);
  Shape shape = x.shape;
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = normalizeAxis(op, (*axes)[i], rank);
    if (seen[size_t(a)])
      failOp(op, "axis {} is sliced twice", a);
    seen[size_t(a)] = true;
    const int64_t dim = x.shape[size_t(a)], s = (*steps)[i];
    if (s == 0)
      failOp(op, "steps must not be 0");
    int64_t b = (*starts)[i], e = (*ends)[i];
    if (b < 0)
      b = b < -dim ? -1 : b + dim;
    if (e < 0)
      e = e < -dim ? -1 : e + dim;
    // |step| as unsigned: steps may be INT64_MIN/MAX in exported models.
    const uint64_t mag = s > 0 ? uint64_t(s) : uint64_t(-(s + 1)) + 1;
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      shape[size_t(a)] = e > b ? int64_t(1 + uint64_t(e - b - 1) / mag) : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      shape[size_t(a)] = b > e ? int64_t(1 + uint64_t(b - e - 1) / mag) : 0;
    }
    first[size_t(a)] = b;
    step[size_t(a)] = s;
  }
  c.out({x.dtype, shape});
  if (!c.wantMaps)
    return;
  IndexMap m;
  m.walk = shape;
  const auto st = strides(x.shape);
  for (int64_t d = 0; d < rank; ++d)
    m.table.push_back(affine(shape[size_t(d)], first[size_t(d)], step[size_t(d)], st[size_t(d)]));
  c.maps({m});
}

// ---------------------------------------------------------------- Split

void split(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const int64_t rank = int64_t(x.shape.size());
  if (rank == 0)
    failOp(op, "cannot split a scalar");
  const int64_t axis = normalizeAxis(op, op.attrs.getInt("axis", 0), rank);
  const int64_t dim = x.shape[size_t(axis)];
  const size_t outs = op.outputs.size();
  auto parts = intsInputOrAttr(op, c.g, 1, "split", c.g.opset >= 13);
  if (parts && !parts->empty()) {
    if (parts->size() != outs)
      failOp(op, "split has {} values but the op has {} outputs", parts->size(), outs);
    int64_t sum = 0;
    for (int64_t p : *parts) {
      if (p < 0)
        failOp(op, "split values must be >= 0, got {}", shapeToString(*parts));
      sum += p;
    }
    if (sum != dim)
      failOp(op, "split {} sums to {}, but axis {} has size {}", shapeToString(*parts), sum, axis, dim);
  } else {
    const int64_t n = op.attrs.getInt("num_outputs", int64_t(outs));
    if (n != int64_t(outs))
      failOp(op, "num_outputs is {} but the op has {} outputs", n, outs);
    parts.emplace();
    if (dim % n == 0) {
      parts->assign(outs, dim / n);
    } else if (c.g.opset >= 18) { // the last chunk is smaller
      const int64_t chunk = (dim + n - 1) / n;
      for (int64_t i = 0; i < n; ++i)
        parts->push_back(std::clamp<int64_t>(dim - i * chunk, 0, chunk));
    } else {
      failOp(op, "axis {} of size {} does not split into {} equal parts", axis, dim, n);
    }
  }
  std::vector<IndexMap> maps;
  const auto st = strides(x.shape);
  int64_t offset = 0;
  for (int64_t p : *parts) {
    Shape s = x.shape;
    s[size_t(axis)] = p;
    c.out({x.dtype, s});
    if (c.wantMaps) {
      IndexMap m;
      m.walk = s;
      for (int64_t d = 0; d < rank; ++d)
        m.table.push_back(affine(s[size_t(d)], d == axis ? offset : 0, 1, st[size_t(d)]));
      maps.push_back(std::move(m));
    }
    offset += p;
  }
  c.maps(std::move(maps));
}

// ---------------------------------------------------------------- Pad

// Source index of padded position j (already shifted by the begin pad) in a
// dim of size n, or kFill.
int64_t padSource(const std::string &mode, int64_t j, int64_t n) {
  if (j >= 0 && j < n)
    return j;
  if (mode == "constant" || n == 0)
    return kFill;
  if (mode == "edge")
    return std::clamp<int64_t>(j, 0, n - 1);
  if (mode == "wrap")
    return ((j % n) + n) % n;
  if (n == 1) // reflect
    return 0;
  const int64_t period = 2 * (n - 1);
  j = ((j % period) + period) % period;
  return j < n ? j : period - j;
}

void pad(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const int64_t rank = int64_t(x.shape.size());
  const bool inputs = c.g.opset >= 11;
  const std::string mode = op.attrs.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    failOp(op, "attribute 'mode' is '{}', expected constant, reflect, edge or wrap", mode);
  std::vector<int64_t> pads;
  if (inputs) {
    if (op.attrs.has("pads"))
      failOp(op, "'pads' is an input since opset 11, not an attribute");
    if (!op.hasInput(1))
      failOp(op, "input 1 (pads) is required");
    pads = detail::constantInputInts(op, c.g, 1, "pads");
  } else {
    if (op.inputs.size() > 1)
      failOp(op, "takes 1 input before opset 11 (pads is an attribute), got {}", op.inputs.size());
    pads = op.attrs.getInts(c.g.opset < 2 ? "paddings" : "pads");
  }
  std::vector<int64_t> axes;
  if (auto a = inputs ? intsInputOrAttr(op, c.g, 3, "axes", true) : std::nullopt) {
    for (int64_t v : *a)
      axes.push_back(normalizeAxis(op, v, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d)
      axes.push_back(d);
  }
  if (pads.size() != 2 * axes.size())
    failOp(op, "pads has {} values, expected {} (begin and end for each of {} axes)", pads.size(),
           2 * axes.size(), axes.size());
  std::vector<int64_t> begin(size_t(rank), 0), end(size_t(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    begin[size_t(axes[i])] = pads[i];
    end[size_t(axes[i])] = pads[i + axes.size()];
  }
  Shape shape = x.shape;
  for (int64_t d = 0; d < rank; ++d) {
    shape[size_t(d)] = x.shape[size_t(d)] + begin[size_t(d)] + end[size_t(d)];
    if (shape[size_t(d)] < 0)
      failOp(op, "pads {} crop more than the input {} has", shapeToString(pads), shapeToString(x.shape));
    if (mode != "constant" && x.shape[size_t(d)] == 0 && shape[size_t(d)] > 0)
      failOp(op, "mode {} cannot pad the empty axis {}", mode, d);
  }
  c.out({x.dtype, shape});
  if (!c.wantMaps)
    return;
  IndexMap m;
  m.walk = shape;
  const auto st = strides(x.shape);
  for (int64_t d = 0; d < rank; ++d) {
    std::vector<int64_t> t(static_cast<size_t>(shape[size_t(d)]));
    for (int64_t i = 0; i < shape[size_t(d)]; ++i) {
      const int64_t s = padSource(mode, i - begin[size_t(d)], x.shape[size_t(d)]);
      t[size_t(i)] = s == kFill ? kFill : s * st[size_t(d)];
    }
    m.table.push_back(std::move(t));
  }
  if (inputs && op.hasInput(2)) {
    const TensorInfo &v = inputInfo(op, c.g, 2);
    if (v.dtype != x.dtype || v.elements() != 1)
      failOp(op, "constant_value (input 2) must be one {} element, got {} {}", dtypeName(x.dtype),
             dtypeName(v.dtype), shapeToString(v.shape));
    if (auto cv = constantValue(c.g, op.inputs[2]))
      m.fillBytes = cv->data;
    else
      m.fillInput = 2;
  } else {
    m.fillBytes = scalarBytes(x.dtype, inputs ? 0.0 : op.attrs.getFloat("value", 0.0));
  }
  c.maps({m});
}

// ---------------------------------------------------------------- Tile / Expand

void tile(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const auto reps = detail::constantInputInts(op, c.g, 1, "repeats");
  if (reps.size() != x.shape.size())
    failOp(op, "repeats has {} values, expected {} (one per input dim)", reps.size(), x.shape.size());
  Shape shape, walk;
  for (size_t d = 0; d < reps.size(); ++d) {
    if (reps[d] < 0)
      failOp(op, "repeats must be >= 0, got {}", shapeToString(reps));
    shape.push_back(x.shape[d] * reps[d]);
    walk.push_back(reps[d]);
    walk.push_back(x.shape[d]);
  }
  c.out({x.dtype, shape});
  if (!c.wantMaps)
    return;
  IndexMap m;
  m.walk = walk; // [r0,d0,r1,d1,...] enumerates the output in order
  const auto st = strides(x.shape);
  for (size_t d = 0; d < reps.size(); ++d) {
    m.table.push_back(std::vector<int64_t>(size_t(reps[d]), 0));
    m.table.push_back(affine(x.shape[d], 0, 1, st[d]));
  }
  c.maps({m});
}

void expand(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const auto spec = detail::constantInputInts(op, c.g, 1, "shape");
  Shape shape;
  try {
    shape = broadcastShapes(x.shape, spec);
  } catch (const Error &e) {
    failOp(op, "cannot expand input {} to {}: {}", shapeToString(x.shape), shapeToString(spec), e.what());
  }
  c.out({x.dtype, shape});
  if (!c.wantMaps)
    return;
  IndexMap m;
  m.walk = shape;
  const auto st = strides(x.shape);
  const size_t off = shape.size() - x.shape.size();
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool real = d >= off && x.shape[d - off] != 1;
    m.table.push_back(real ? affine(shape[d], 0, 1, st[d - off]) : std::vector<int64_t>(size_t(shape[d]), 0));
  }
  c.maps({m});
}

// ---------------------------------------------------------------- Gather family

// Compile-time indices of input 1 normalised to [0, dim), or nullopt at run time.
std::optional<std::vector<int64_t>> constantIndices(const Op &op, const Graph &g, int64_t dim) {
  auto idx = optionalInts(op, g, 1);
  if (!idx)
    return std::nullopt;
  for (int64_t &i : *idx) {
    const int64_t orig = i;
    if (i < 0)
      i += dim;
    if (i < 0 || i >= dim)
      failOp(op, "index {} is out of range for an axis of size {}", orig, dim);
  }
  return idx;
}

void requireIntIndices(const Op &op, const Graph &g) {
  const TensorInfo &ind = inputInfo(op, g, 1);
  if (ind.dtype != DType::I32 && ind.dtype != DType::I64)
    failOp(op, "indices must be int32 or int64, got {}", dtypeName(ind.dtype));
}

void gather(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const TensorInfo &ind = inputInfo(op, c.g, 1);
  requireIntIndices(op, c.g);
  const int64_t rank = int64_t(x.shape.size());
  if (rank == 0)
    failOp(op, "data must have rank >= 1");
  const int64_t axis = normalizeAxis(op, op.attrs.getInt("axis", 0), rank);
  Shape shape(x.shape.begin(), x.shape.begin() + axis);
  shape.insert(shape.end(), ind.shape.begin(), ind.shape.end());
  shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  c.out({x.dtype, shape});
  if (!c.wantMaps)
    return;
  auto idx = constantIndices(op, c.g, x.shape[size_t(axis)]);
  if (!idx)
    return;
  IndexMap m = identityMap(x.shape);
  m.walk[size_t(axis)] = int64_t(idx->size());
  m.table[size_t(axis)] = affine(int64_t(idx->size()), 0, 0, 0);
  const int64_t stride = strides(x.shape)[size_t(axis)];
  for (size_t i = 0; i < idx->size(); ++i)
    m.table[size_t(axis)][i] = (*idx)[i] * stride;
  c.maps({m});
}

void gatherElements(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const TensorInfo &ind = inputInfo(op, c.g, 1);
  requireIntIndices(op, c.g);
  const int64_t rank = int64_t(x.shape.size());
  if (rank == 0 || int64_t(ind.shape.size()) != rank)
    failOp(op, "data {} and indices {} must have the same rank >= 1", shapeToString(x.shape),
           shapeToString(ind.shape));
  const int64_t axis = normalizeAxis(op, op.attrs.getInt("axis", 0), rank);
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && ind.shape[size_t(d)] > x.shape[size_t(d)])
      failOp(op, "indices {} exceed data {} in dim {}", shapeToString(ind.shape), shapeToString(x.shape), d);
  c.out({x.dtype, ind.shape});
  if (!c.wantMaps)
    return;
  auto idx = constantIndices(op, c.g, x.shape[size_t(axis)]);
  if (!idx)
    return;
  const auto xs = strides(x.shape), is = strides(ind.shape);
  std::vector<int64_t> src(idx->size());
  for (size_t e = 0; e < idx->size(); ++e) {
    int64_t off = 0;
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t i = (int64_t(e) / is[size_t(d)]) % ind.shape[size_t(d)];
      off += (d == axis ? (*idx)[e] : i) * xs[size_t(d)];
    }
    src[e] = off;
  }
  c.maps({explicitMap(std::move(src))});
}

void gatherNd(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const TensorInfo &ind = inputInfo(op, c.g, 1);
  requireIntIndices(op, c.g);
  const int64_t r = int64_t(x.shape.size()), q = int64_t(ind.shape.size());
  const int64_t b = op.attrs.getInt("batch_dims", 0);
  if (r < 1 || q < 1 || b < 0 || b >= std::min(r, q))
    failOp(op, "needs data rank >= 1, indices rank >= 1 and 0 <= batch_dims < both, got data {}, indices {}, batch_dims {}",
           shapeToString(x.shape), shapeToString(ind.shape), b);
  const int64_t last = ind.shape.back();
  if (last < 1 || last > r - b)
    failOp(op, "indices' last dim {} must be in [1, {}] (data rank - batch_dims)", last, r - b);
  for (int64_t d = 0; d < b; ++d)
    if (x.shape[size_t(d)] != ind.shape[size_t(d)])
      failOp(op, "batch dim {} differs: data {} vs indices {}", d, shapeToString(x.shape), shapeToString(ind.shape));
  Shape shape(ind.shape.begin(), ind.shape.end() - 1);
  shape.insert(shape.end(), x.shape.begin() + b + last, x.shape.end());
  c.out({x.dtype, shape});
  if (!c.wantMaps)
    return;
  auto idx = optionalInts(op, c.g, 1);
  if (!idx)
    return;
  const auto xs = strides(x.shape);
  const int64_t tuples = int64_t(idx->size()) / last;
  int64_t perBatch = 1; // tuples per batch entry
  for (int64_t d = b; d < q - 1; ++d)
    perBatch *= ind.shape[size_t(d)];
  const int64_t batchStride = b > 0 ? xs[size_t(b - 1)] : 0;
  IndexMap m;
  m.walk = {tuples};
  std::vector<int64_t> t0(static_cast<size_t>(tuples));
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = perBatch ? (t / perBatch) * batchStride : 0;
    for (int64_t k = 0; k < last; ++k) {
      int64_t i = (*idx)[size_t(t * last + k)];
      const int64_t dim = x.shape[size_t(b + k)];
      if (i < -dim || i >= dim)
        failOp(op, "index {} is out of range for data dim {} of size {}", i, b + k, dim);
      off += (i < 0 ? i + dim : i) * xs[size_t(b + k)];
    }
    t0[size_t(t)] = off;
  }
  m.table.push_back(std::move(t0));
  for (int64_t d = b + last; d < r; ++d) {
    m.walk.push_back(x.shape[size_t(d)]);
    m.table.push_back(affine(x.shape[size_t(d)], 0, 1, xs[size_t(d)]));
  }
  c.maps({m});
}

// ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

int64_t blockSize(const Op &op) {
  const int64_t b = op.attrs.getInt("blocksize");
  if (b < 1)
    failOp(op, "blocksize must be >= 1, got {}", b);
  return b;
}

void depthToSpace(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  detail::requireRank(op, x, 4, "input");
  const int64_t b = blockSize(op);
  const std::string mode = op.attrs.getString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    failOp(op, "attribute 'mode' is '{}', expected DCR or CRD", mode);
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  if (C % (b * b) != 0)
    failOp(op, "channels {} are not divisible by blocksize^2 = {}", C, b * b);
  const int64_t Co = C / (b * b);
  c.out({x.dtype, {N, Co, H * b, W * b}});
  if (!c.wantMaps)
    return;
  // Output (n, c, h*b+i, w*b+j) walked as [N, C', H, b, W, b].
  const int64_t hw = H * W;
  const bool dcr = mode == "DCR";
  IndexMap m;
  m.walk = {N, Co, H, b, W, b};
  m.table = {affine(N, 0, 1, C * hw),
             affine(Co, 0, 1, dcr ? hw : b * b * hw),
             affine(H, 0, 1, W),
             affine(b, 0, 1, dcr ? b * Co * hw : b * hw),
             affine(W, 0, 1, 1),
             affine(b, 0, 1, dcr ? Co * hw : hw)};
  c.maps({m});
}

void spaceToDepth(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  detail::requireRank(op, x, 4, "input");
  const int64_t b = blockSize(op);
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  if (H % b != 0 || W % b != 0)
    failOp(op, "spatial dims {}x{} are not divisible by blocksize {}", H, W, b);
  c.out({x.dtype, {N, C * b * b, H / b, W / b}});
  if (!c.wantMaps)
    return;
  // Output (n, (i*b+j)*C + c, h, w) = x(n, c, h*b+i, w*b+j), walked as [N,b,b,C,H/b,W/b].
  IndexMap m;
  m.walk = {N, b, b, C, H / b, W / b};
  m.table = {affine(N, 0, 1, C * H * W), affine(b, 0, 1, W),     affine(b, 0, 1, 1),
             affine(C, 0, 1, H * W),     affine(H / b, 0, b, W), affine(W / b, 0, b, 1)};
  c.maps({m});
}

// ---------------------------------------------------------------- Trilu

void trilu(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  if (x.shape.size() < 2)
    failOp(op, "input must have rank >= 2, got {}", shapeToString(x.shape));
  int64_t k = 0;
  if (op.hasInput(1)) {
    const auto v = detail::constantInputInts(op, c.g, 1, "k");
    if (v.size() != 1)
      failOp(op, "k must be a scalar");
    k = v[0];
  }
  const bool upper = op.attrs.getInt("upper", 1) != 0;
  c.out(x);
  if (!c.wantMaps)
    return;
  const int64_t R = x.shape[x.shape.size() - 2], C = x.shape.back();
  std::vector<int64_t> t(size_t(R * C));
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) {
      const bool keep = upper ? j - i >= k : j - i <= k;
      t[size_t(i * C + j)] = keep ? i * C + j : kFill;
    }
  IndexMap m;
  m.walk = {x.elements() / std::max<int64_t>(R * C, 1), R * C};
  m.table = {affine(m.walk[0], 0, 1, R * C), std::move(t)};
  m.fillBytes = std::vector<uint8_t>(dtypeSize(x.dtype), 0);
  c.maps({m});
}

// ---------------------------------------------------------------- Compress / ReverseSequence

void compress(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  auto cond = optionalInts(op, c.g, 1);
  if (!cond)
    detail::failNotConstant(op, c.g, 1, "condition (it decides the output shape)");
  const bool hasAxis = op.attrs.has("axis");
  const int64_t axis = hasAxis ? normalizeAxis(op, op.attrs.getInt("axis"), int64_t(x.shape.size())) : 0;
  const Shape in = hasAxis ? x.shape : Shape{x.elements()};
  const int64_t dim = in[size_t(axis)];
  if (int64_t(cond->size()) > dim)
    failOp(op, "condition has {} values but the axis has size {}", cond->size(), dim);
  std::vector<int64_t> keep;
  for (size_t i = 0; i < cond->size(); ++i)
    if ((*cond)[i])
      keep.push_back(int64_t(i));
  Shape shape = in;
  shape[size_t(axis)] = int64_t(keep.size());
  c.out({x.dtype, shape});
  if (!c.wantMaps)
    return;
  IndexMap m = identityMap(in);
  m.walk[size_t(axis)] = int64_t(keep.size());
  const int64_t stride = strides(in)[size_t(axis)];
  m.table[size_t(axis)] = affine(int64_t(keep.size()), 0, 0, 0);
  for (size_t i = 0; i < keep.size(); ++i)
    m.table[size_t(axis)][i] = keep[i] * stride;
  c.maps({m});
}

void reverseSequence(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const int64_t rank = int64_t(x.shape.size());
  if (rank < 2)
    failOp(op, "input must have rank >= 2");
  const int64_t batchAxis = normalizeAxis(op, op.attrs.getInt("batch_axis", 1), rank);
  const int64_t timeAxis = normalizeAxis(op, op.attrs.getInt("time_axis", 0), rank);
  if (batchAxis == timeAxis || std::max(batchAxis, timeAxis) > 1)
    failOp(op, "batch_axis and time_axis must be 0 and 1 in some order");
  c.out(x);
  if (!c.wantMaps)
    return;
  auto lens = optionalInts(op, c.g, 1);
  if (!lens)
    return;
  const int64_t B = x.shape[size_t(batchAxis)], T = x.shape[size_t(timeAxis)];
  if (int64_t(lens->size()) != B)
    failOp(op, "sequence_lens has {} values, expected {} (batch size)", lens->size(), B);
  const auto st = strides(x.shape);
  const int64_t inner = x.elements() / std::max<int64_t>(B * T, 1);
  std::vector<int64_t> src;
  src.reserve(size_t(x.elements()));
  for (int64_t a = 0; a < x.shape[0]; ++a)
    for (int64_t bb = 0; bb < x.shape[1]; ++bb) {
      const int64_t batch = batchAxis == 0 ? a : bb, time = batchAxis == 0 ? bb : a;
      const int64_t len = std::clamp<int64_t>((*lens)[size_t(batch)], 0, T);
      const int64_t t = time < len ? len - 1 - time : time;
      const int64_t base = batch * st[size_t(batchAxis)] + t * st[size_t(timeAxis)];
      for (int64_t i = 0; i < inner; ++i)
        src.push_back(base + i);
    }
  c.maps({explicitMap(std::move(src))});
}

// ---------------------------------------------------------------- Resize / Upsample (nearest)

double nearestRound(const std::string &mode, double v) {
  if (mode == "floor")
    return std::floor(v);
  if (mode == "ceil")
    return std::ceil(v);
  const double f = std::floor(v);
  if (v - f == 0.5)
    return mode == "round_prefer_ceil" ? f + 1 : f;
  return std::round(v);
}

} // namespace

ResizeParams resizeParams(const Op &op, const Graph &g) {
  const TensorInfo &x = inputInfo(op, g, 0);
  const size_t rank = x.shape.size();
  const bool upsample = op.type == "Upsample";
  ResizeParams p;
  p.mode = op.attrs.getString("mode", "nearest");
  if (p.mode != "nearest" && p.mode != "linear" && p.mode != "cubic")
    failOp(op, "mode '{}' must be nearest, linear or cubic", p.mode);
  p.transform = op.attrs.getString("coordinate_transformation_mode", "half_pixel");
  p.nearestMode = op.attrs.getString("nearest_mode", "round_prefer_floor");
  p.cubicA = op.attrs.getFloat("cubic_coeff_a", -0.75);
  p.excludeOutside = op.attrs.getInt("exclude_outside", 0) != 0;
  p.extrapolation = op.attrs.getFloat("extrapolation_value", 0.0);
  // Upsample and Resize-10: x_in = x_out / scale, nearest floors.
  const bool legacy = upsample || g.opset < 11;
  if (legacy) {
    p.transform = "asymmetric";
    p.nearestMode = "floor";
  }
  static const char *transforms[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                     "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  if (std::find_if(std::begin(transforms), std::end(transforms), [&](const char *t) { return p.transform == t; }) ==
      std::end(transforms))
    failOp(op, "coordinate_transformation_mode '{}' is not supported", p.transform);
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  auto floatsOf = [&](size_t i) -> std::optional<std::vector<double>> {
    if (!op.hasInput(i))
      return std::nullopt;
    auto v = constantValue(g, op.inputs[i]);
    if (!v)
      detail::failNotConstant(op, g, i, i == 1 && !legacy ? "roi" : "scales");
    return v->toDoubles();
  };
  if (upsample && g.opset < 9) {
    scales = op.attrs.getFloats("scales");
  } else {
    if (auto s = floatsOf(legacy ? 1 : 2))
      scales = *s;
    if (!legacy && op.hasInput(3))
      sizes = detail::constantInputInts(op, g, 3, "sizes");
  }
  if (!sizes.empty() && !scales.empty())
    failOp(op, "scales and sizes cannot both be given");
  p.in = x.shape;
  p.out.resize(rank);
  p.scale.assign(rank, 1.0);
  if (!sizes.empty()) {
    if (sizes.size() != rank)
      failOp(op, "sizes has {} values, expected {}", sizes.size(), rank);
    for (size_t d = 0; d < rank; ++d) {
      p.out[d] = sizes[d];
      p.scale[d] = x.shape[d] ? double(sizes[d]) / double(x.shape[d]) : 1.0;
    }
  } else {
    if (scales.size() != rank)
      failOp(op, "scales has {} values, expected {} (one per dim); or give sizes", scales.size(), rank);
    for (size_t d = 0; d < rank; ++d) {
      if (!(scales[d] > 0))
        failOp(op, "scales must be > 0, got {}", scales[d]);
      p.scale[d] = double(float(scales[d]));
      const double out = std::floor(double(x.shape[d]) * p.scale[d]);
      if (!(out < 0x1p62)) // (an infinite or huge scale: no int64 holds the dim)
        failOp(op, "scales[{}] = {} resizes dim {} of {} elements beyond any tensor; give a smaller scale", d,
               scales[d], d, x.shape[d]);
      p.out[d] = int64_t(out);
    }
  }
  if (p.transform == "tf_crop_and_resize") {
    if (auto r = floatsOf(1))
      p.roi = *r;
    if (p.roi.size() != 2 * rank)
      failOp(op, "tf_crop_and_resize needs roi with {} values", 2 * rank);
  }
  return p;
}

std::optional<double> resizeSource(const ResizeParams &p, size_t d, int64_t i) {
  // As the ONNX reference: the "output width" is scale * in, not the rounded size.
  const double in = double(p.in[d]), s = p.scale[d], outWidth = s * in, x = double(i);
  const std::string &t = p.transform;
  if (t == "half_pixel")
    return (x + 0.5) / s - 0.5;
  if (t == "pytorch_half_pixel")
    return outWidth == 1 ? -0.5 : (x + 0.5) / s - 0.5;
  if (t == "align_corners")
    return outWidth == 1 ? 0.0 : x * (in - 1) / (outWidth - 1);
  if (t == "asymmetric")
    return x / s;
  if (t == "tf_half_pixel_for_nn")
    return (x + 0.5) / s;
  const size_t rank = p.in.size();
  const double b = p.roi[d], e = p.roi[d + rank];
  const double o = outWidth == 1 ? 0.5 * (b + e) * (in - 1) : b * (in - 1) + x * (e - b) * (in - 1) / (outWidth - 1);
  if (o < 0 || o > in - 1)
    return std::nullopt; // extrapolation_value
  return o;
}

namespace {

void resize(Ctx &c) {
  const Op &op = c.op;
  const TensorInfo &x = inputInfo(op, c.g, 0);
  const ResizeParams p = resizeParams(op, c.g);
  c.out({x.dtype, p.out});
  if (!c.wantMaps)
    return;
  if (p.mode != "nearest")
    failOp(op, "mode '{}' is not a data movement; the resize-decomposition pass rewrites it (float types only)",
           p.mode);
  IndexMap m;
  m.walk = p.out;
  const auto st = strides(x.shape);
  for (size_t d = 0; d < p.out.size(); ++d) {
    std::vector<int64_t> t(static_cast<size_t>(p.out[d]));
    for (int64_t i = 0; i < p.out[d]; ++i) {
      const auto o = resizeSource(p, d, i);
      t[size_t(i)] = !o ? kFill
                        : std::clamp<int64_t>(int64_t(nearestRound(p.nearestMode, *o)), 0, x.shape[d] - 1) * st[d];
    }
    m.table.push_back(std::move(t));
  }
  m.fillBytes = scalarBytes(x.dtype, p.extrapolation);
  c.maps({m});
}

const std::map<std::string, std::function<void(Ctx &)>> &resolvers() {
  static const std::map<std::string, std::function<void(Ctx &)>> r = {
      {"Slice", slice},
      {"Split", split},
      {"Pad", pad},
      {"Tile", tile},
      {"Expand", expand},
      {"Gather", gather},
      {"GatherElements", gatherElements},
      {"GatherND", gatherNd},
      {"DepthToSpace", depthToSpace},
      {"SpaceToDepth", spaceToDepth},
      {"Trilu", trilu},
      {"Compress", compress},
      {"ReverseSequence", reverseSequence},
      {"Resize", resize},
      {"Upsample", resize},
  };
  return r;
}

} // namespace

void checkTensorSize(const Op &op, const Shape &shape) {
  constexpr int64_t kMaxElements = int64_t(1) << 32;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      failOp(op, "output shape {} has a negative dimension", shapeToString(shape));
    if (d != 0 && n > kMaxElements / d)
      failOp(op, "output shape {} is too large (more than 2^32 elements)", shapeToString(shape));
    n *= d;
  }
}

bool isMovementOp(const std::string &type) { return resolvers().count(type) != 0; }

MovementResult resolveMovement(const Op &op, const Graph &graph, bool wantMaps) {
  auto it = resolvers().find(op.type);
  if (it == resolvers().end())
    failOp(op, "not a data-movement op");
  Ctx c{op, graph, wantMaps, {}};
  it->second(c);
  if (c.r.outputs.size() != op.outputs.size())
    failOp(op, "has {} outputs, expected {}", op.outputs.size(), c.r.outputs.size());
  for (const TensorInfo &info : c.r.outputs)
    checkTensorSize(op, info.shape);
  return std::move(c.r);
}

std::vector<uint8_t> applyIndexMap(const IndexMap &map, const std::vector<uint8_t> &in,
                                   const uint8_t *fill, size_t elemSize, size_t outElems) {
  std::vector<uint8_t> out(outElems * elemSize);
  uint8_t *p = out.data();
  forEachSource(map, 0, outElems, [&](int64_t src) {
    const uint8_t *s = src == kFill ? fill : in.data() + size_t(src) * elemSize;
    POPC_ASSERT(s && (src == kFill || (size_t(src) + 1) * elemSize <= in.size()));
    std::memcpy(p, s, elemSize);
    p += elemSize;
  });
  return out;
}

} // namespace popc::ir
