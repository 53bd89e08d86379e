// Row-wise ops whose one row is too big for a tile's share, as reductions and
// elementwise ops, which split a row over tiles (a Reduce* of a long row
// reduces in two stages; elementwise ops tile by elements):
// - Softmax / LogSoftmax over a row of more than kMaxRowBytes (a language
//   model's vocabulary): max = ReduceMax(x), e = Exp(x - max),
//   y = e / ReduceSum(e), or (x - max) - Log(ReduceSum(e)). Opset < 13 rows
//   (everything from `axis` on) are a Reshape to 2-D and back.
// - InstanceNormalization over a plane of more than kMaxRowBytes: the mean and
//   variance as ReduceMean over the spatial axes, then
//   (x - mean) / Sqrt(var + epsilon) * scale + B, scale and B as [C, 1, ..].
// - GatherElements whose data line (along `axis`) or index row is over
//   kMaxRowBytes (GridSample and RoiAlign of a large image gather from a whole
//   image plane): with the axis last, rows R, line D and J indices per row,
//   the line splits into C chunks of Dc and the indices into B bands of Jb;
//   every (row, band, chunk) gathers its band from its chunk at the index's
//   position within its own chunk, a GatherElements over [R, B, C, Dc] rows
//   that each fit a tile, and a Where per chunk picks each index's own.
//   Exact: the chosen value is the element itself.
// - TopK (float) over a row of more than kMaxRowBytes with a small k: the
//   top k of each chunk, then the top k of those candidates; an index is its
//   chunk's offset plus its index in the chunk. Exact, ties included (chunks
//   and candidates keep index order).
// - ArgMax/ArgMin (float, first index of ties) over such a row: TopK with
//   k = 1 (largest / smallest), which the rule above then splits.
// - CumSum over a row of more than kMaxRowBytes: each chunk's own CumSum plus
//   the exclusive CumSum of the chunk totals (a float sum then adds in another
//   order; integers are exact).
// - MaxPool with an Indices output (float) over planes of more than
//   kMaxRowBytes (the codelet holds a whole plane): for each kernel offset in
//   window order, the strided slice of the -inf-padded input; a running max
//   keeps the first of equal values (Greater, Where), and its index is
//   computed from per-dim position constants (row-major, or column-major for
//   storage_order 1) plus the plane's offset, as ONNX's flat index. Exact.
// - ScatterElements over a line of more than kMaxRowBytes, or with more
//   indices per line than that, or on a 1-D tensor (ScatterND and MaxUnpool
//   decompose into flat ones): the line in chunks of Dc plus a trash slot;
//   index band by band (in order, so later writes still win), every chunk
//   scatters the band's indices that fall in it and sends the rest to its
//   trash slot; the trash is dropped. Exact for every reduction.
// Smaller rows keep their one-vertex kernels (the same outputs either way,
// within rounding for Softmax and InstanceNormalization: the sums run in
// another order).
#include "compiler/ir/op_attrs.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include <limits>
#include <numeric>
#include <optional>

namespace popc::passes {

namespace {

// A quarter of the smallest tile (ipu1's 256 KiB), as rnn-decomposition:
// the row and its result then take half of one.
constexpr uint64_t kMaxRowBytes = 64 * 1024;

bool floatType(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16; }

bool floatTensor(const ir::Graph &g, const std::string &name) { return floatType(g.tensor(name).info.dtype); }

// The softmax rows of `op`: the row length and whether opset < 13 coerces to 2-D.
uint64_t softmaxRowBytes(const ir::Graph &g, const ir::Op &op) {
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  const int64_t axis = ir::softmaxAxis(op, g);
  uint64_t cols = 1;
  for (int64_t d = axis; d < int64_t(x.shape.size()); ++d)
    if (ir::softmaxCoerces2D(g) || d == axis)
      cols *= uint64_t(x.shape[size_t(d)]);
  return cols * dtypeSize(x.dtype);
}

size_t rewriteSoftmax(ir::Graph &g, size_t at, const ir::Op &op) {
  OpInserter ops(g, at, op.name, op.ipu);
  const Shape shape = g.tensor(op.inputs[0]).info.shape;
  const int64_t axis = ir::softmaxAxis(op, g);
  std::string x = op.inputs[0];
  int64_t reduceAxis = axis;
  if (ir::softmaxCoerces2D(g)) {
    int64_t rows = 1, cols = 1;
    for (size_t d = 0; d < shape.size(); ++d)
      (int64_t(d) < axis ? rows : cols) *= shape[d];
    x = ops.reshape(x, {rows, cols});
    reduceAxis = 1;
  }
  const bool coerced = x != op.inputs[0];
  const std::string out = coerced ? "" : op.outputs[0];
  const std::string centred = ops.add("Sub", {x, ops.reduce("ReduceMax", x, {reduceAxis}, true)});
  const std::string e = ops.add("Exp", {centred});
  const std::string sum = ops.reduce("ReduceSum", e, {reduceAxis}, true);
  const std::string y = op.type == "LogSoftmax" ? ops.add("Sub", {centred, ops.add("Log", {sum})}, out)
                                                : ops.add("Div", {e, sum}, out);
  if (coerced)
    ops.reshape(y, shape, op.outputs[0]);
  return ops.next() - at;
}

size_t rewriteInstanceNorm(ir::Graph &g, size_t at, const ir::Op &op) {
  OpInserter ops(g, at, op.name, op.ipu);
  const ir::TensorInfo &xi = g.tensor(op.inputs[0]).info;
  std::vector<int64_t> spatial;
  Shape channelShape(xi.shape.size() - 1, 1);
  channelShape[0] = xi.shape[1];
  for (size_t d = 2; d < xi.shape.size(); ++d)
    spatial.push_back(int64_t(d));
  const std::string &x = op.inputs[0];
  const std::string centred = ops.add("Sub", {x, ops.reduce("ReduceMean", x, spatial, true)});
  const std::string var = ops.reduce("ReduceMean", ops.add("Mul", {centred, centred}), spatial, true);
  const std::string eps =
      addFloatConstant(g, op.name + "_epsilon", xi.dtype, {}, {op.attrs.getFloat("epsilon", 1e-5)});
  const std::string normed = ops.add("Div", {centred, ops.add("Sqrt", {ops.add("Add", {var, eps})})});
  const std::string scale = ops.reshape(op.inputs[1], channelShape);
  const std::string bias = ops.reshape(op.inputs[2], channelShape);
  ops.add("Add", {ops.add("Mul", {normed, scale}), bias}, op.outputs[0]);
  return ops.next() - at;
}

// Element indices along a line of D as int64 in [0, D): negative ones count from the end.
std::string flatIndices(OpInserter &ops, ir::Graph &g, const std::string &base, const std::string &idx, int64_t D) {
  return wrapNegativeIndices(ops, g, base, idx, addInt64Constant(g, base + "_c", {D}, true));
}

// GatherElements/ScatterElements index bands (line chunks: chunkElements).
constexpr int64_t kBandIndices = 2048;

// The axis of a GatherElements/ScatterElements whose indices have the data's
// other dims (ir::indicesShareOtherDims), or -1.
int64_t elementAxis(const ir::Graph &g, const ir::Op &op) {
  const Shape &data = g.tensor(op.inputs[0]).info.shape, &idx = g.tensor(op.inputs[1]).info.shape;
  if (data.empty())
    return -1;
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", 0), int64_t(data.size()));
  return ir::indicesShareOtherDims(data, idx, axis) ? axis : -1;
}

bool longGatherElements(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "GatherElements" || op.inputs.size() != 2 || op.outputs.size() != 1)
    return false;
  const int64_t axis = elementAxis(g, op);
  if (axis < 0)
    return false;
  const ir::TensorInfo &data = g.tensor(op.inputs[0]).info, &idx = g.tensor(op.inputs[1]).info;
  const uint64_t line = uint64_t(data.shape[size_t(axis)]) * dtypeSize(data.dtype);
  const uint64_t row = uint64_t(idx.shape[size_t(axis)]) * (dtypeSize(idx.dtype) + dtypeSize(data.dtype));
  return line > kMaxRowBytes || row > kMaxRowBytes;
}

// The axis-last view [R, D] of x (a Transpose first when `axis` is not last);
// `back` turns a [R, k] result into the op's layout, written to `out`.
struct AxisRows {
  std::vector<int64_t> perm; // empty when the axis is already last
  Shape outer;               // the other dims, in order
  int64_t rows = 1, length = 0;
};

AxisRows axisRows(const Shape &shape, int64_t axis) {
  AxisRows a;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d)
    if (d != axis) {
      a.outer.push_back(shape[size_t(d)]);
      a.rows *= shape[size_t(d)];
    }
  a.length = shape[size_t(axis)];
  if (axis != int64_t(shape.size()) - 1) {
    for (int64_t d = 0; d < int64_t(shape.size()); ++d)
      if (d != axis)
        a.perm.push_back(d);
    a.perm.push_back(axis);
  }
  return a;
}

class RowRewriter {
public:
  RowRewriter(ir::Graph &g, size_t at, const ir::Op &op, int64_t axis)
      : g_(g), op_(op), ops_(g, at, op.name, op.ipu),
        a_(axisRows(g.tensor(op.inputs[0]).info.shape, axis)) {}

  std::string i64(const std::vector<int64_t> &v, bool scalar = false) {
    return addInt64Constant(g_, op_.name + "_c", v, scalar);
  }
  // x as [R, C*Dc] rows (padded with `fill` at the end) viewed [R, C, Dc].
  std::string chunked(const std::string &x, int64_t chunk, const std::string &fill) {
    std::string v = rowsOf(x, a_.length);
    const int64_t C = chunks(chunk);
    if (C * chunk != a_.length) {
      std::vector<std::string> in{v, i64({0, 0, 0, C * chunk - a_.length})};
      if (!fill.empty())
        in.push_back(fill);
      v = ops_.add("Pad", in);
    }
    return ops_.reshape(v, {a_.rows, C, chunk});
  }
  int64_t chunks(int64_t chunk) const { return (a_.length + chunk - 1) / chunk; }
  // A [R, n] result (n elements along the axis) back to the op's layout, written to `out`.
  void back(const std::string &y, int64_t n, const std::string &out) {
    Shape shape = a_.outer;
    shape.push_back(n);
    if (a_.perm.empty())
      return void(ops_.reshape(y, shape, out));
    std::vector<int64_t> inverse(a_.perm.size());
    for (size_t i = 0; i < a_.perm.size(); ++i)
      inverse[size_t(a_.perm[i])] = int64_t(i);
    ops_.transpose(ops_.reshape(y, shape), inverse, out);
  }
  // An operand with the data's other dims (GatherElements/ScatterElements
  // indices, updates) as [R, n] rows, n its length along the axis.
  std::string rowsOf(const std::string &x, int64_t n) {
    return ops_.reshape(a_.perm.empty() ? x : ops_.transpose(x, a_.perm), {a_.rows, n});
  }
  // Element indices idx split by chunks of Dc: {the chunk, the position in it}.
  std::pair<std::string, std::string> chunkAndOffset(const std::string &idx, int64_t chunk) {
    const std::string c = ops_.add("Div", {idx, i64({chunk}, true)});
    return {c, ops_.add("Sub", {idx, ops_.add("Mul", {c, i64({chunk}, true)})})};
  }
  OpInserter &ops() { return ops_; }
  const AxisRows &rows() const { return a_; }
  size_t next() const { return ops_.next(); }

private:
  ir::Graph &g_;
  const ir::Op &op_;
  OpInserter ops_;
  AxisRows a_;
};

int64_t chunkElements(DType t) { return int64_t(kMaxRowBytes / dtypeSize(t)); }

size_t rewriteGatherElements(ir::Graph &g, size_t at, const ir::Op &op) {
  const DType dtype = g.tensor(op.inputs[0]).info.dtype;
  const int64_t axis = elementAxis(g, op), J = g.tensor(op.inputs[1]).info.shape[size_t(axis)];
  RowRewriter r(g, at, op, axis);
  OpInserter &ops = r.ops();
  const int64_t R = r.rows().rows, D = r.rows().length;
  const int64_t Dc = std::min<int64_t>(D, chunkElements(dtype)), C = r.chunks(Dc);
  const int64_t Jb = std::min<int64_t>(J, kBandIndices), B = (J + Jb - 1) / Jb;
  // Data [R, C, Dc] (zero-padded) as [R, 1, C, Dc], one copy per band.
  const std::string x = ops.add("Expand", {ops.reshape(r.chunked(op.inputs[0], Dc, ""), {R, 1, C, Dc}),
                                           r.i64({R, B, C, Dc})});
  // Indices as int64 in [0, D) (negative ones count from the end), padded with 0, [R, B, 1, Jb].
  std::string idx = flatIndices(ops, g, op.name, r.rowsOf(op.inputs[1], J), D);
  if (B * Jb != J)
    idx = ops.add("Pad", {idx, r.i64({0, 0, 0, B * Jb - J})});
  const auto [chunk, local] = r.chunkAndOffset(ops.reshape(idx, {R, B, 1, Jb}), Dc);
  ir::Attributes last;
  last.set("axis", int64_t(3));
  // Every chunk's value at the index's in-chunk position, then the index's own
  // chunk's (Where, chunk by chunk: contiguous slices, and exact for any value).
  const std::string all = ops.add("GatherElements", {x, ops.add("Expand", {local, r.i64({R, B, C, Jb})})}, "", last);
  std::string picked = ops.slice(all, 2, 0, 1);
  for (int64_t c = 1; c < C; ++c)
    picked = ops.add("Where", {ops.add("Equal", {chunk, r.i64({c}, true)}), ops.slice(all, 2, c, c + 1), picked});
  std::string y = ops.reshape(picked, {R, B * Jb});
  if (B * Jb != J)
    y = ops.slice(y, 1, 0, J);
  r.back(y, J, op.outputs[0]);
  return r.next() - at;
}

std::optional<int64_t> constantAxis(const ir::Graph &g, const ir::Op &op, size_t input) {
  if (op.inputs.size() <= input || !isConstant(g, op.inputs[input]))
    return std::nullopt;
  const std::vector<double> v = constantAsDoubles(g.tensor(op.inputs[input]));
  if (v.size() != 1)
    return std::nullopt;
  return ir::normalizeAxis(op, int64_t(v[0]), int64_t(g.tensor(op.inputs[0]).info.shape.size()));
}

// The axis of `op` when it is a `type` with `outputs` outputs over a float
// tensor (opset 11 on), else nullopt.
std::optional<int64_t> floatRowAxis(const ir::Graph &g, const ir::Op &op, const char *type, size_t outputs,
                                    int64_t defaultAxis) {
  if (op.type != type || op.outputs.size() != outputs || g.opset < 11)
    return std::nullopt;
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  if (!floatType(x.dtype) || x.shape.empty())
    return std::nullopt;
  return ir::normalizeAxis(op, op.attrs.getInt("axis", defaultAxis), int64_t(x.shape.size()));
}

bool longTopK(const ir::Graph &g, const ir::Op &op) {
  const std::optional<int64_t> found = floatRowAxis(g, op, "TopK", 2, -1);
  if (!found)
    return false;
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  const int64_t axis = *found;
  const int64_t D = x.shape[size_t(axis)], k = ir::topKCount(op, g), Dc = chunkElements(x.dtype);
  const int64_t candidates = (D + Dc - 1) / Dc * std::min(k, Dc);
  // Worth it when the candidates are a small row themselves.
  return uint64_t(D) * dtypeSize(x.dtype) > kMaxRowBytes && k > 0 &&
         uint64_t(candidates) * (dtypeSize(x.dtype) + 8) <= kMaxRowBytes;
}

size_t rewriteTopK(ir::Graph &g, size_t at, const ir::Op &op) {
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", -1), int64_t(x.shape.size()));
  const int64_t k = ir::topKCount(op, g), Dc = chunkElements(x.dtype);
  const bool largest = op.attrs.getInt("largest", 1) != 0;
  RowRewriter r(g, at, op, axis);
  const int64_t C = r.chunks(Dc), kc = std::min(k, Dc), R = r.rows().rows;
  // Padding never wins: it sorts last, and after every real element it ties with.
  const double inf = std::numeric_limits<double>::infinity();
  const std::string fill = addFloatConstant(g, op.name + "_fill", x.dtype, {}, {largest ? -inf : inf});
  ir::Attributes a;
  a.set("axis", int64_t(-1));
  a.set("largest", int64_t(largest));
  a.set("sorted", int64_t(1));
  OpInserter &ops = r.ops();
  const std::string x3 = r.chunked(op.inputs[0], Dc, fill);
  const std::vector<std::string> first = ops.addOutputs("TopK", {x3, r.i64({kc})}, 2, a);
  const std::string &v1 = first[0], &i1 = first[1];
  std::vector<int64_t> offsets;
  for (int64_t c = 0; c < C; ++c)
    offsets.push_back(c * Dc);
  const std::string offset = addInt64Tensor(g, op.name + "_offsets", {1, C, 1}, offsets);
  const std::string global = ops.reshape(ops.add("Add", {i1, offset}), {R, C * kc});
  const std::vector<std::string> best = ops.addOutputs("TopK", {ops.reshape(v1, {R, C * kc}), r.i64({k})}, 2, a);
  const std::string &v = best[0], &pos = best[1];
  ir::Attributes along;
  along.set("axis", int64_t(1));
  r.back(v, k, op.outputs[0]);
  r.back(ops.add("GatherElements", {global, pos}, "", along), k, op.outputs[1]);
  return r.next() - at;
}

// TopK whose k is too large for the two stages above (its candidates would be
// a long row themselves): a merge sort over tiles. Each chunk of the row is
// sorted on its tile (a TopK of the whole chunk); then pairs of sorted runs
// are merged by bitonic merging (the second run reversed, then
// compare-exchanges at distances L, L/2, ..., 1: each a few elementwise ops
// over all the rows), and each merged run keeps its first K2 (k rounded up to
// a power of two). Elements compare by value, then the lower index first, as
// TopK orders ties: a total order, so the result is exact.
bool longTopKLargeK(const ir::Graph &g, const ir::Op &op) {
  const std::optional<int64_t> axis = floatRowAxis(g, op, "TopK", 2, -1);
  if (!axis || longTopK(g, op))
    return false;
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  return uint64_t(x.shape[size_t(*axis)]) * dtypeSize(x.dtype) > kMaxRowBytes && ir::topKCount(op, g) > 0;
}

constexpr int64_t kSortedChunk = 1024; // a power of two

int64_t powerOfTwoAtLeast(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

size_t rewriteTopKLargeK(ir::Graph &g, size_t at, const ir::Op &op) {
  const ir::TensorInfo x = g.tensor(op.inputs[0]).info;
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", -1), int64_t(x.shape.size()));
  const int64_t k = ir::topKCount(op, g);
  const bool largest = op.attrs.getInt("largest", 1) != 0;
  RowRewriter r(g, at, op, axis);
  OpInserter &ops = r.ops();
  const int64_t R = r.rows().rows, D = r.rows().length;
  // The chunks sorted on their tiles: small, as a TopK vertex costs about its
  // row times k (1024 of them: ~1 M cycles), and merging is cheap per element.
  const int64_t Dc = kSortedChunk;
  const int64_t C = powerOfTwoAtLeast((D + Dc - 1) / Dc), K2 = powerOfTwoAtLeast(k);
  const double inf = std::numeric_limits<double>::infinity();
  const std::string fill = addFloatConstant(g, op.name + "_fill", x.dtype, {}, {largest ? -inf : inf});
  std::string v = r.rowsOf(op.inputs[0], D);
  if (C * Dc != D)
    v = ops.add("Pad", {v, r.i64({0, 0, 0, C * Dc - D}), fill}); // pads sort last: worst value, highest index
  ir::Attributes sortAttrs;
  sortAttrs.set("axis", int64_t(-1));
  sortAttrs.set("largest", int64_t(largest));
  sortAttrs.set("sorted", int64_t(1));
  const std::vector<std::string> sorted = ops.addOutputs("TopK", {ops.reshape(v, {R, C, Dc}), r.i64({Dc})}, 2, sortAttrs);
  std::vector<int64_t> offsets;
  for (int64_t c = 0; c < C; ++c)
    offsets.push_back(c * Dc);
  v = sorted[0];
  std::string i = ops.add("Add", {sorted[1], addInt64Tensor(g, op.name + "_offsets", {1, C, 1}, offsets)});
  ir::Attributes axis2;
  axis2.set("axis", int64_t(2));
  auto half = [&](const std::string &t, int64_t h) { return ops.slice(t, 2, h, h + 1); };
  auto reversed = [&](const std::string &t) { // along the last of 4 dims
    return ops.add("Slice", {t, r.i64({-1}), r.i64({std::numeric_limits<int64_t>::min()}), r.i64({3}), r.i64({-1})});
  };
  const std::string beats = largest ? "Greater" : "Less";
  int64_t runs = C, L = Dc;
  while (runs > 1) {
    const int64_t P = runs / 2, M = 2 * L;
    // A run and the next one reversed: a bitonic sequence of 2L.
    auto bitonic = [&](const std::string &t) {
      const std::string t4 = ops.reshape(t, {R, P, 2, L});
      return ops.reshape(ops.add("Concat", {half(t4, 0), reversed(half(t4, 1))}, "", axis2), {R * P, M});
    };
    v = bitonic(v);
    i = bitonic(i);
    for (int64_t j = L; j >= 1; j /= 2) {
      const std::string v4 = ops.reshape(v, {R * P, M / (2 * j), 2, j}), i4 = ops.reshape(i, {R * P, M / (2 * j), 2, j});
      const std::string va = half(v4, 0), vb = half(v4, 1), ia = half(i4, 0), ib = half(i4, 1);
      const std::string first = ops.add("Or", {ops.add(beats, {va, vb}), ops.add("And", {ops.add("Equal", {va, vb}),
                                                                                        ops.add("Less", {ia, ib})})});
      auto exchange = [&](const std::string &a, const std::string &b) {
        return ops.reshape(ops.add("Concat", {ops.add("Where", {first, a, b}), ops.add("Where", {first, b, a})}, "",
                                   axis2),
                           {R * P, M});
      };
      v = exchange(va, vb);
      i = exchange(ia, ib);
    }
    runs = P;
    L = M;
    if (L > K2) { // only the best K2 of each run can be among the top k
      v = ops.slice(v, 1, 0, K2);
      i = ops.slice(i, 1, 0, K2);
      L = K2;
    }
    v = ops.reshape(v, {R, runs * L});
    i = ops.reshape(i, {R, runs * L});
  }
  v = ops.reshape(v, {R, L});
  i = ops.reshape(i, {R, L});
  r.back(L == k ? v : ops.slice(v, 1, 0, k), k, op.outputs[0]);
  r.back(L == k ? i : ops.slice(i, 1, 0, k), k, op.outputs[1]);
  return r.next() - at;
}

bool longArgReduce(const ir::Graph &g, const ir::Op &op) {
  if ((op.type != "ArgMax" && op.type != "ArgMin") || op.outputs.size() != 1 || g.opset < 11)
    return false;
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  if (!floatType(x.dtype) || x.shape.empty())
    return false;
  const ir::ReduceParams r = ir::argReduceParams(op, g);
  return !r.selectLast && r.axes.size() == 1 &&
         uint64_t(x.shape[size_t(r.axes[0])]) * dtypeSize(x.dtype) > kMaxRowBytes;
}

size_t rewriteArgReduce(ir::Graph &g, size_t at, const ir::Op &op) {
  OpInserter ops(g, at, op.name, op.ipu);
  const ir::ReduceParams r = ir::argReduceParams(op, g);
  ir::Attributes a;
  a.set("axis", r.axes[0]);
  a.set("largest", int64_t(op.type == "ArgMax"));
  a.set("sorted", int64_t(1));
  const std::vector<std::string> top =
      ops.addOutputs("TopK", {op.inputs[0], addInt64Constant(g, op.name + "_k", {1})}, 2, a);
  ops.reshape(top[1], r.outShape, op.outputs[0]);
  return ops.next() - at;
}

// Hardmax of rows over 64 KiB: 1 where an element is its row's first
// maximum, as Equal(its position along the axis, ArgMax with keepdims) cast to
// x's type; the ArgMax is then split in two stages like any long one. Before
// opset 13 Hardmax flattens from `axis` on, which is the same only for the last axis.
bool longHardmax(const ir::Graph &g, const ir::Op &op) {
  const std::optional<int64_t> axis = floatRowAxis(g, op, "Hardmax", 1, g.opset >= 13 ? -1 : 1);
  if (!axis)
    return false;
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  return (g.opset >= 13 || *axis == int64_t(x.shape.size()) - 1) &&
         uint64_t(x.shape[size_t(*axis)]) * dtypeSize(x.dtype) > kMaxRowBytes;
}

size_t rewriteHardmax(ir::Graph &g, size_t at, const ir::Op &op) {
  const ir::TensorInfo x = g.tensor(op.inputs[0]).info;
  const int64_t rank = int64_t(x.shape.size());
  const int64_t axis = ir::normalizeAxis(op, op.attrs.getInt("axis", g.opset >= 13 ? -1 : 1), rank);
  OpInserter ops(g, at, op.name, op.ipu);
  ir::Attributes arg;
  arg.set("axis", axis);
  arg.set("keepdims", int64_t(1));
  const std::string first = ops.add("ArgMax", {op.inputs[0]}, "", arg);
  Shape along(size_t(rank), 1);
  along[size_t(axis)] = x.shape[size_t(axis)];
  std::vector<int64_t> positions(size_t(x.shape[size_t(axis)]));
  std::iota(positions.begin(), positions.end(), int64_t(0));
  const std::string position = addInt64Tensor(g, op.name + "_positions", along, positions);
  ops.cast(ops.add("Equal", {position, first}), x.dtype, op.outputs[0]);
  return ops.next() - at;
}

// LRN over more channels than 64 KiB: the window's sum of squares along the
// channels as a Conv of ones over a [N, 1, C, H*W] view (tiled like any
// Conv), then y = x / (bias + alpha / size * sum)^beta elementwise.
bool longLrn(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "LRN" || op.outputs.size() != 1 || !op.attrs.has("size"))
    return false;
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  return floatType(x.dtype) && x.shape.size() >= 3 && op.attrs.getInt("size") >= 1 &&
         uint64_t(x.shape[1]) * dtypeSize(x.dtype) > kMaxRowBytes;
}

size_t rewriteLrn(ir::Graph &g, size_t at, const ir::Op &op) {
  const ir::TensorInfo x = g.tensor(op.inputs[0]).info;
  const int64_t size = op.attrs.getInt("size"), N = x.shape[0], C = x.shape[1];
  const int64_t P = x.elements() / std::max<int64_t>(1, N * C);
  OpInserter ops(g, at, op.name, op.ipu);
  const std::string squares = ops.reshape(ops.add("Mul", {op.inputs[0], op.inputs[0]}), {N, 1, C, P});
  ir::Attributes conv;
  conv.set("kernel_shape", std::vector<int64_t>{size, 1});
  conv.set("pads", std::vector<int64_t>{(size - 1) / 2, 0, size / 2, 0}); // floor before, ceil after
  const std::string ones =
      addFloatConstant(g, op.name + "_ones", x.dtype, {1, 1, size, 1}, std::vector<double>(size_t(size), 1.0));
  const std::string sums = ops.reshape(ops.add("Conv", {squares, ones}, "", conv), x.shape);
  auto scalar = [&](const char *name, double v) { return addFloatConstant(g, op.name + "_" + name, x.dtype, {}, {v}); };
  const std::string scaled = ops.add("Mul", {sums, scalar("alpha", op.attrs.getFloat("alpha", 1e-4) / double(size))});
  const std::string base = ops.add("Add", {scaled, scalar("bias", op.attrs.getFloat("bias", 1.0))});
  const std::string denominator = ops.add("Pow", {base, scalar("beta", op.attrs.getFloat("beta", 0.75))});
  ops.add("Div", {op.inputs[0], denominator}, op.outputs[0]);
  return ops.next() - at;
}

bool largeScatterElements(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "ScatterElements" || op.inputs.size() != 3 || op.outputs.size() != 1 || g.opset < 11)
    return false;
  const ir::TensorInfo &data = g.tensor(op.inputs[0]).info, &idx = g.tensor(op.inputs[1]).info;
  if (data.dtype == DType::Bool || data.shape.empty() || data.elements() == 0 || idx.elements() == 0)
    return false;
  const int64_t axis = elementAxis(g, op);
  if (axis < 0)
    return false;
  const uint64_t line = uint64_t(data.shape[size_t(axis)]) * dtypeSize(data.dtype);
  const uint64_t row = uint64_t(idx.shape[size_t(axis)]) * (8 + dtypeSize(data.dtype));
  return line > kMaxRowBytes || row > kMaxRowBytes || (data.shape.size() == 1 && line + row > kMaxRowBytes / 4);
}

size_t rewriteScatterElements(ir::Graph &g, size_t at, const ir::Op &op) {
  const ir::TensorInfo data = g.tensor(op.inputs[0]).info, idxInfo = g.tensor(op.inputs[1]).info;
  const int64_t axis = elementAxis(g, op);
  RowRewriter r(g, at, op, axis);
  OpInserter &ops = r.ops();
  const int64_t R = r.rows().rows, D = r.rows().length, J = idxInfo.shape[size_t(axis)];
  const int64_t Dc = std::min<int64_t>(D, chunkElements(data.dtype)), C = r.chunks(Dc);
  const int64_t Jb = std::min<int64_t>(J, kBandIndices), B = (J + Jb - 1) / Jb;
  // Data [R, C, Dc + 1]: the last slot of each chunk takes the writes of other chunks' indices.
  std::string cur = ops.add("Pad", {r.chunked(op.inputs[0], Dc, ""), r.i64({0, 0, 0, 0, 0, 1})});
  // Indices and updates as [R, B*Jb] (padding: index D, outside every real element; update 0).
  std::string idx = flatIndices(ops, g, op.name, r.rowsOf(op.inputs[1], J), D), upd = r.rowsOf(op.inputs[2], J);
  if (B * Jb != J) {
    idx = ops.add("Pad", {idx, r.i64({0, 0, 0, B * Jb - J}), r.i64({D}, true)});
    upd = ops.add("Pad", {upd, r.i64({0, 0, 0, B * Jb - J})});
  }
  idx = ops.reshape(idx, {R, B, Jb});
  upd = ops.reshape(upd, {R, B, Jb});
  const auto [chunk, local] = r.chunkAndOffset(idx, Dc);
  std::vector<int64_t> ids(static_cast<size_t>(C));
  std::iota(ids.begin(), ids.end(), int64_t(0));
  const std::string chunks = addInt64Tensor(g, op.name + "_chunks", {1, C, 1}, ids);
  ir::Attributes a = op.attrs;
  a.set("axis", int64_t(2));
  for (int64_t b = 0; b < B; ++b) {
    const std::string mine = ops.add("Equal", {ops.slice(chunk, 1, b, b + 1), chunks});
    const std::string where = ops.add("Where", {mine, ops.slice(local, 1, b, b + 1), r.i64({Dc}, true)});
    const std::string values = ops.add("Expand", {ops.slice(upd, 1, b, b + 1), r.i64({R, C, Jb})});
    cur = ops.add("ScatterElements", {cur, where, values}, "", a);
  }
  std::string y = ops.reshape(ops.slice(cur, 2, 0, Dc), {R, C * Dc});
  if (C * Dc != D)
    y = ops.slice(y, 1, 0, D);
  r.back(y, D, op.outputs[0]);
  return r.next() - at;
}

bool longCumSum(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "CumSum" || op.outputs.size() != 1 || g.opset < 11)
    return false;
  const std::optional<int64_t> axis = constantAxis(g, op, 1);
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  const DType t = x.dtype;
  const bool supported = t == DType::F32 || t == DType::F64 || t == DType::I32 || t == DType::I64;
  return axis && supported && uint64_t(x.shape[size_t(*axis)]) * dtypeSize(t) > kMaxRowBytes;
}

size_t rewriteCumSum(ir::Graph &g, size_t at, const ir::Op &op) {
  const int64_t axis = *constantAxis(g, op, 1), Dc = chunkElements(g.tensor(op.inputs[0]).info.dtype);
  RowRewriter r(g, at, op, axis);
  OpInserter &ops = r.ops();
  const int64_t C = r.chunks(Dc), R = r.rows().rows, D = r.rows().length;
  const std::string x3 = r.chunked(op.inputs[0], Dc, ""); // zeros add nothing
  ir::Attributes inner = op.attrs, carry = op.attrs;
  carry.set("exclusive", int64_t(1));
  // Within chunks, then each chunk's carry: the exclusive CumSum of the totals (reverse alike).
  const std::string local = ops.add("CumSum", {x3, r.i64({2}, true)}, "", inner);
  const std::string totals = ops.reduce("ReduceSum", x3, {2}, true);
  const std::string carried = ops.add("CumSum", {totals, r.i64({1}, true)}, "", carry);
  std::string y = ops.reshape(ops.add("Add", {local, carried}), {R, C * Dc});
  if (C * Dc != D)
    y = ops.slice(y, 1, 0, D);
  r.back(y, D, op.outputs[0]);
  return r.next() - at;
}

bool largeIndexedMaxPool(const ir::Graph &g, const ir::Op &op) {
  if (op.type != "MaxPool" || op.outputs.size() != 2 || op.outputs[1].empty() || g.opset < 11)
    return false;
  const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
  if ((x.dtype != DType::F32 && x.dtype != DType::F64) || x.shape.size() < 3 || x.shape[0] * x.shape[1] == 0)
    return false;
  return uint64_t(x.elements() / (x.shape[0] * x.shape[1])) * dtypeSize(x.dtype) > kMaxRowBytes;
}

size_t rewriteIndexedMaxPool(ir::Graph &g, size_t at, const ir::Op &op) {
  OpInserter ops(g, at, op.name, op.ipu);
  const ir::TensorInfo x = g.tensor(op.inputs[0]).info;
  const ir::WindowParams p = ir::poolParams(op, g);
  const size_t dims = x.shape.size() - 2;
  const bool columnMajor = op.attrs.getInt("storage_order", 0) == 1;
  auto i64 = [&](const std::vector<int64_t> &v) { return addInt64Constant(g, op.name + "_c", v); };
  // -inf padding so that every window lies inside.
  const std::vector<int64_t> pads = ir::windowPadding(p, x.shape, p.outSpatial);
  const double inf = std::numeric_limits<double>::infinity();
  const std::string xp =
      ops.add("Pad", {op.inputs[0], i64(pads), addFloatConstant(g, op.name + "_fill", x.dtype, {}, {-inf})});
  // Element strides of a plane in the index ONNX reports.
  std::vector<int64_t> stride(dims, 1);
  if (columnMajor)
    for (size_t d = 1; d < dims; ++d)
      stride[d] = stride[d - 1] * x.shape[d + 1];
  else
    for (size_t d = dims - 1; d-- > 0;)
      stride[d] = stride[d + 1] * x.shape[d + 3];
  int64_t volume = 1;
  for (int64_t k : p.kernel)
    volume *= k;
  std::string best, index;
  for (int64_t flat = 0; flat < volume; ++flat) {
    const std::vector<int64_t> starts = ir::windowOffsetStarts(p, flat);
    std::vector<int64_t> ends, axes;
    std::string position;
    for (size_t d = 0; d < dims; ++d) {
      ends.push_back(starts[d] + (p.outSpatial[d] - 1) * p.strides[d] + 1);
      axes.push_back(int64_t(d + 2));
      // This offset's input position along d, times d's stride, over the output's dim d.
      Shape shape(x.shape.size(), 1);
      shape[d + 2] = p.outSpatial[d];
      std::vector<int64_t> at;
      for (int64_t o = 0; o < p.outSpatial[d]; ++o)
        at.push_back((o * p.strides[d] - p.padsBegin[d] + starts[d]) * stride[d]);
      const std::string part = addInt64Tensor(g, op.name + "_positions", shape, at);
      position = position.empty() ? part : ops.add("Add", {position, part});
    }
    const std::string window = ops.add("Slice", {xp, i64(starts), i64(ends), i64(axes), i64(p.strides)});
    if (best.empty()) {
      best = window;
      index = position;
      continue;
    }
    const std::string wins = ops.add("Greater", {window, best}); // the first of equal values stays
    best = ops.add("Where", {wins, window, best}, flat + 1 == volume ? op.outputs[0] : "");
    index = ops.add("Where", {wins, position, index});
  }
  if (volume == 1)
    best = ops.add("Identity", {best}, op.outputs[0]);
  // Plus each plane's offset: ((n * C + c) * plane).
  const int64_t N = x.shape[0], C = x.shape[1], plane = x.elements() / (N * C);
  std::vector<int64_t> offsets;
  for (int64_t i = 0; i < N * C; ++i)
    offsets.push_back(i * plane);
  Shape planes(x.shape.size(), 1);
  planes[0] = N;
  planes[1] = C;
  ops.add("Add", {index, addInt64Tensor(g, op.name + "_planes", planes, offsets)}, op.outputs[1]);
  return ops.next() - at;
}

} // namespace

size_t decomposeLongRows(ir::Ir &ir) {
  // Reshape takes its shape as an input from opset 5 on.
  if (ir.main.opset < 5)
    return 0;
  size_t count = replaceOps(
      ir,
      [](const ir::Graph &g, const ir::Op &op) {
        return (op.type == "Softmax" || op.type == "LogSoftmax") && op.outputs.size() == 1 &&
               floatTensor(g, op.inputs[0]) && softmaxRowBytes(g, op) > kMaxRowBytes;
      },
      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteSoftmax(g, at, r.op); });
  count += replaceOps(
      ir,
      [](const ir::Graph &g, const ir::Op &op) {
        if (op.type != "InstanceNormalization" || op.inputs.size() != 3 || op.outputs.size() != 1)
          return false;
        const ir::TensorInfo &x = g.tensor(op.inputs[0]).info;
        const DType t = x.dtype;
        return (t == DType::F32 || t == DType::F64) && x.shape.size() >= 3 &&
               uint64_t(x.elements() / std::max<int64_t>(1, x.shape[0] * x.shape[1])) * dtypeSize(t) > kMaxRowBytes;
      },
      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteInstanceNorm(g, at, r.op); });
  // Pad takes its pads as an input from opset 11 on.
  if (ir.main.opset >= 11)
    count += replaceOps(ir, longGatherElements,
                        [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteGatherElements(g, at, r.op); });
  count += replaceOps(ir, largeIndexedMaxPool,
                      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteIndexedMaxPool(g, at, r.op); });
  count += replaceOps(ir, largeScatterElements,
                      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteScatterElements(g, at, r.op); });
  count += replaceOps(ir, longLrn, [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteLrn(g, at, r.op); });
  count += replaceOps(ir, longHardmax,
                      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteHardmax(g, at, r.op); });
  count += replaceOps(ir, longArgReduce,
                      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteArgReduce(g, at, r.op); });
  count += replaceOps(ir, longTopK, [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteTopK(g, at, r.op); });
  count += replaceOps(ir, longTopKLargeK,
                      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteTopKLargeK(g, at, r.op); });
  count += replaceOps(ir, longCumSum,
                      [](ir::Graph &g, size_t at, const Replaced &r) { return rewriteCumSum(g, at, r.op); });
  if (count)
    log::get("passes")->debug("long-row-decomposition: {} row-wise ops split over tiles",
                              count);
  return count;
}

} // namespace popc::passes
