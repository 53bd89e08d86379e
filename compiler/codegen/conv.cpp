// Direct 2-D convolution of a band of output rows (+bias, optional relu).
#include "compiler/codegen/cycle_estimates.h"
#include "compiler/codegen/elementwise_math.h"
#include "compiler/codegen/kinds.h"
#include "compiler/codegen/operand.h"
#include "compiler/codegen/window.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>

namespace popc::codegen::detail {

using namespace llvm;

namespace {

// The input channels are an immediate field, not part of the code: layers
// split their input channels into slices of many sizes (GoogLeNet: 270 conv
// types, 52 functions), and a constant count lets LLVM unroll the channel loop
// into code that takes long to compile (ResNet's 7x7 stem: 3 channels x 49
// taps). Only when the accumulator sets (at most 4) alternate kernel taps or the
// channels are at least as many as the sets: fewer channels than a 1x1 kernel's
// sets would be dealt to the sets differently, so those stay constants.
constexpr uint32_t kMaxAccumulatorSets = 4;

bool channelsImmediate(const ConvSpec &s) {
  return s.inChannels >= kMaxAccumulatorSets || uint64_t(s.kernelH) * s.kernelW >= kMaxAccumulatorSets;
}

// Host code shape. The band is computed in register tiles of `ob` output
// channels x `nr` output rows x `nv` vectors of `v` output columns: the tile's
// accumulators stay in registers over the whole reduction (input channels as a
// loop, kernel taps unrolled), so each input vector loaded feeds `ob` FMAs and
// each weight `nr*nv`. Zero padding costs nothing in the loop: columns outside
// the image are masked lanes of constant-position edge chunks (interior chunks
// run unmasked in a loop), and kernel rows outside the image are loads with a
// run-time mask (all lanes off) in the tiles whose rows may need them.
// A 1x1 stride-1 conv whose rows are contiguous runs as one long row (a small
// matmul out[oc][p] = sum_ic w[oc][ic] * in[ic][p]).
struct Tiling {
  bool flat = false;     // the band as one row of outRows*outWidth outputs
  int64_t rows = 0;      // output rows of the (virtual) band
  int64_t width = 0;     // outputs per (virtual) row
  int64_t v = 16, nv = 1, nr = 1, ob = 1;
};

// About 16 accumulators per tile: enough independent FMA chains to hide the
// FMA latency (4 cycles, 2 pipes), few enough to stay in registers with the
// input vectors. Tiles with fewer than kMinChains add accumulator sets.
constexpr int64_t kAccumulators = 16;
constexpr int64_t kMinChains = 8;

Tiling planTiling(const ConvSpec &s) {
  Tiling t;
  const int64_t OW = s.outWidth;
  const Window w = windowOf(s);
  t.flat = s.kernelH == 1 && s.kernelW == 1 && s.strideH == 1 && s.strideW == 1 && s.inWidth == OW && [&] {
    const Window::ConstRows r0 = w.rows(0);
    const Window::ConstColumns c0 = w.columns(0);
    return c0.offset == 0 && c0.lo == 0 && c0.hi == OW && r0.lo == 0 && r0.hi == int64_t(s.outRows);
  }();
  t.rows = t.flat ? 1 : s.outRows;
  t.width = t.flat ? int64_t(s.outRows) * OW : OW;
  // One host vector (16 f32 / 8 f64 for AVX-512), narrower for narrow rows.
  t.v = s.dtype == DType::F64 ? 8 : 16;
  while (t.v > 4 && t.v / 2 >= t.width)
    t.v /= 2;
  // Output channels per tile: all if at most 8, else evenly split blocks of <= 8.
  const int64_t oc = s.outChannels;
  const int64_t blocks = (oc + 7) / 8;
  t.ob = (oc + blocks - 1) / blocks;
  t.nv = std::min<int64_t>({(t.width + t.v - 1) / t.v, std::max<int64_t>(1, kAccumulators / t.ob), 8});
  const int64_t rowBudget = std::max<int64_t>(1, kAccumulators / (t.ob * t.nv));
  t.nr = 1;
  for (int64_t d = 1; d <= std::min(rowBudget, t.rows); ++d)
    if (t.rows % d == 0)
      t.nr = d;
  return t;
}

// The band's rows as an immediate field, not part of the code: a layer's
// row bands differ at the image's edges (which kernel rows fall in the
// padding), so a 3x3 conv had three functions and ResNet's 7x7 stem four.
// For a band of one output row (Window::oneRowImmediate) the code branches
// around the taps of a kernel row outside the image, as the constant code
// leaves them out: the same arithmetic in the same order, and as fast
// (popc-vertex-bench). Bands of several rows keep constant rows: there one
// row's taps would need a branch per tile row or a select per FMA (40-50 %
// slower).
std::optional<uint32_t> rowsImmediate(const ConvSpec &s) { return windowOf(s).oneRowImmediate(); }

} // namespace

KernelDesc describe(const ConvSpec &s) {
  if (s.integer) {
    validateIntegerOperands("Conv", s.dtype, *s.integer);
    if (s.hasBias || s.relu)
      fail("codegen: integer Conv has no bias and no fused relu");
  } else if (s.dtype != DType::F32 && s.dtype != DType::F64 && s.dtype != DType::F16) {
    unsupported("Conv", s.dtype);
  }
  if (s.halfPartials && s.dtype != DType::F16)
    fail("codegen: half partials are for float16 Conv, not {}", dtypeName(s.dtype));
  const DType inType = s.integer ? s.integer->a : s.dtype, wType = s.integer ? s.integer->b : s.dtype;
  windowOf(s).validate("Conv");
  KernelDesc d;
  d.kind = "conv";
  d.name = fmt::format("Conv_ic{}_oc{}_in{}x{}_rows{}+{}_out{}+{}x{}_k{}x{}_s{}x{}_d{}x{}_p{}x{}_{}", s.inChannels,
                       s.outChannels, s.inHeight, s.inWidth, s.inRowBegin, s.inRows, s.outRowBegin, s.outRows,
                       s.outWidth, s.kernelH, s.kernelW, s.strideH, s.strideW, s.dilationH, s.dilationW, s.padTop,
                       s.padLeft, dtypeName(s.dtype));
  if (s.hasBias)
    d.name += "_bias";
  if (s.relu)
    d.name += "_relu";
  if (s.halfPartials)
    d.name += "_halfPartials";
  if (s.integer)
    d.name += integerSuffix(*s.integer);
  d.fields.push_back({"in", fieldBytes("in", {s.inChannels, s.inRows, s.inWidth}, inType), FieldAccess::Input});
  d.fields.push_back({"weights", fieldBytes("weights", {s.outChannels, s.inChannels, s.kernelH, s.kernelW}, wType),
                      FieldAccess::Input});
  if (s.hasBias) {
    // Optional: the input-channel slices after a split's first add none, and
    // pass their weights (at least outChannels elements) in its place.
    d.fields.push_back({"bias", fieldBytes("bias", {s.outChannels}, s.dtype), FieldAccess::Input});
    d.optionalFields.push_back({2, 1});
  }
  d.fields.push_back(
      {"out", fieldBytes("out", {s.outChannels, s.outRows, s.outWidth}, s.dtype), FieldAccess::Output});
  ConvSpec code = s; // what the code depends on: the spec without its immediates
  std::string immediates;
  if (channelsImmediate(s)) {
    d.fields.push_back({"inChannels", 0, FieldAccess::Immediate, s.inChannels});
    code.inChannels = 0;
    immediates += ",inChannels=immediate";
  }
  if (std::optional<uint32_t> rows = rowsImmediate(s)) {
    d.fields.push_back({"rows", 0, FieldAccess::Immediate, *rows});
    code = withoutOneRowFields(code);
    immediates += ",rows=immediate";
  }
  if (!immediates.empty())
    d.codeKey = key(code) + immediates;
  const uint64_t outputs = uint64_t(s.outChannels) * s.outRows * s.outWidth;
  d.cycles = cycles::conv(outputs, uint64_t(s.inChannels) * s.kernelH * s.kernelW, s.relu, s.dtype == DType::F64,
                          s.integer.has_value(), s.halfPartials);
  return d;
}

namespace {

// A run of `count` column chunks of nv*v outputs starting at `start`,
// `start + nv*v`, ...; runtime chunks are emitted as a loop and never need masks.
struct Chunks {
  int64_t start, count;
  bool loop;
};

class ConvEmitter {
public:
  ConvEmitter(Emitter &em, const ConvSpec &s)
      : em_(em), b_(em.b()), s_(s), w_(windowOf(s)), inOperand_(Operand::of(s.dtype, s.integer, false)),
        weightsOperand_(Operand::of(s.dtype, s.integer, true)), accum_{computeDType(s.dtype), s.halfPartials} {}

  void run();

private:
  std::vector<Chunks> chunks() const;
  bool laneInImage(int64_t kw, int64_t col) const;
  // One register tile: channels [oc0, oc0+ob), rows [ohl0, ohl0+nr), columns
  // from colStart (constant in `constStart` for edge chunks).
  void tile(Value *oc0, int64_t ob, Value *ohl0, int64_t group0, int64_t groups, Value *colStart,
            std::optional<int64_t> constStart);

  Emitter &em_;
  IRBuilder<> &b_;
  const ConvSpec &s_;
  Window w_;
  Operand inOperand_, weightsOperand_; // how the in and weights fields are read
  Accumulator accum_;
  Tiling t_;
  std::vector<Window::ConstRows> rows_;       // per kernel row
  std::vector<Window::ConstColumns> cols_;    // per kernel column
  Value *in_ = nullptr, *weights_ = nullptr, *bias_ = nullptr, *out_ = nullptr;
  Value *inChannels_ = nullptr; // i64: the immediate field, or the spec's constant
  Value *rowsImm_ = nullptr;    // i64: rowsImmediate's packed field, or null (rows_ then)
};

bool ConvEmitter::laneInImage(int64_t kw, int64_t col) const {
  if (col >= t_.width)
    return false;
  return t_.flat || (col >= cols_[kw].lo && col < cols_[kw].hi);
}

std::vector<Chunks> ConvEmitter::chunks() const {
  const int64_t L = t_.nv * t_.v, X = t_.width;
  if (X <= L)
    return {{0, 1, false}};
  // Columns where every tap is in the image.
  int64_t lo = 0, hi = X;
  if (!t_.flat)
    for (const Window::ConstColumns &c : cols_) {
      lo = std::max(lo, c.lo);
      hi = std::min(hi, c.hi);
    }
  std::vector<Chunks> out;
  auto interior = [&](int64_t start) { return start >= lo && start + L <= hi; };
  for (int64_t start = 0; start + L <= X;) {
    int64_t n = 0;
    while (start + (n + 1) * L <= X && interior(start + n * L))
      ++n;
    if (n >= 2) {
      out.push_back({start, n, true});
      start += n * L;
    } else {
      out.push_back({start, 1, false});
      start += L;
    }
  }
  if (X % L)
    out.push_back({X - L, 1, false}); // overlaps the previous chunk: recomputes the same values
  return out;
}

void ConvEmitter::tile(Value *oc0, int64_t ob, Value *ohl0, int64_t group0, int64_t groups, Value *colStart,
                       std::optional<int64_t> constStart) {
  const DType dt = accum_.compute;
  const int64_t V = t_.v, NV = t_.nv, NR = t_.nr, KH = s_.kernelH, KW = s_.kernelW, KK = KH * KW;
  const int64_t W = s_.inWidth, SW = s_.strideW;
  const int64_t outPlane = int64_t(s_.outRows) * s_.outWidth;
  Type *vt = em_.vecType(dt, unsigned(V));
  auto acc = [&](int64_t j, int64_t r, int64_t v) { return size_t((j * NR + r) * NV + v); };

  // Per kernel row and tile row: in the image for all, none or some (runtime
  // flag) of the row groups this tile runs for; field row offset. With the
  // rows an immediate (one group), each pair is all or none, by its bit.
  enum class Rows { All, None, Some };
  std::vector<Rows> rowKind(size_t(KH * NR), Rows::All);
  std::vector<Value *> rowValid(size_t(KH * NR), nullptr), rowOffset(size_t(KH * NR), nullptr);
  Value *inPlane = nullptr; // elements per input channel of the field
  // With the rows an immediate: the field offset of kernel row kh (i64).
  std::function<Value *(Value *)> oneRowOffset;
  if (rowsImm_) {
    POPC_ASSERT(groups == 1 && NR == 1);
    const Window::OneRow band = w_.decodeOneRow(em_, rowsImm_);
    inPlane = b_.CreateMul(band.inRows, em_.i64(W));
    oneRowOffset = [this, band, ohl0, W](Value *kh) {
      Value *fieldRow = b_.CreateAdd(b_.CreateMul(ohl0, em_.i64(s_.strideH)),
                                     b_.CreateAdd(band.rowBase, b_.CreateMul(kh, em_.i64(s_.dilationH))));
      return b_.CreateMul(fieldRow, em_.i64(W));
    };
    for (int64_t kh = 0; kh < KH; ++kh) {
      rowValid[size_t(kh)] = band.inImage[size_t(kh)];
      rowOffset[size_t(kh)] = oneRowOffset(em_.i64(kh));
    }
  } else {
    inPlane = em_.i64(int64_t(s_.inRows) * W);
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t r = 0; r < NR; ++r) {
        const Window::ConstRows &rw = rows_[kh];
        const int64_t first = group0 * NR + r, last = (group0 + groups - 1) * NR + r;
        Rows kind = first >= rw.lo && last < rw.hi ? Rows::All : (last < rw.lo || first >= rw.hi ? Rows::None : Rows::Some);
        const size_t i = size_t(kh * NR + r);
        rowKind[i] = kind;
        Value *ohl = b_.CreateAdd(ohl0, em_.i64(r));
        if (kind == Rows::Some)
          rowValid[i] = b_.CreateAnd(b_.CreateICmpSGE(ohl, em_.i64(rw.lo)), b_.CreateICmpSLT(ohl, em_.i64(rw.hi)));
        const int64_t rowOff = rw.base - s_.inRowBegin; // field row of relative output row 0
        rowOffset[i] = b_.CreateMul(b_.CreateAdd(b_.CreateMul(ohl, em_.i64(s_.strideH)), em_.i64(rowOff)), em_.i64(W));
      }
  }
  // Lanes per (kernel column, vector): constant masks for edge chunks.
  auto lanes = [&](int64_t kw, int64_t v) {
    std::vector<bool> on(size_t(V), true);
    if (constStart)
      for (int64_t l = 0; l < V; ++l)
        on[size_t(l)] = laneInImage(kw, *constStart + v * V + l);
    return on;
  };
  auto any = [](const std::vector<bool> &on) { return std::find(on.begin(), on.end(), true) != on.end(); };

  // Independent accumulator sets when the tile alone has too few FMA chains
  // to hide the FMA latency: kernel taps alternate between the sets or, for
  // 1x1 kernels, input channels do (the loop then runs over channel groups).
  const int64_t chains = ob * NR * NV;
  const int64_t sets = std::min<int64_t>((kMinChains + chains - 1) / chains, kMaxAccumulatorSets);
  const bool tapSets = KK >= sets;
  // (An immediate count with a 1x1 kernel is at least kMaxAccumulatorSets >= sets.)
  const int64_t icStep = tapSets ? 1 : channelsImmediate(s_) ? sets : std::clamp<int64_t>(s_.inChannels, 1, sets);
  const int64_t nSets = tapSets ? sets : icStep;
  auto slot = [&](int64_t set, int64_t j, int64_t r, int64_t v) { return size_t(set) * size_t(chains) + acc(j, r, v); };
  // Kernel rows per group of the rolled kernel-row loop (0: unrolled): for
  // kernels of 25 taps or more with the rows an immediate, and at least two
  // groups. Taps alternate sets by their index kh * KW + kw, so a group is
  // the fewest rows whose taps are a multiple of the sets.
  int64_t rollRows = 0;
  if (rowsImm_ && KK >= 25) {
    const int64_t u = tapSets ? sets / std::gcd(KW, sets) : 1;
    if (KH / u >= 2)
      rollRows = u;
  }

  Emitter::Carried init(size_t(nSets * chains), Constant::getNullValue(vt));
  for (int64_t j = 0; j < ob; ++j) {
    Value *oc = b_.CreateAdd(oc0, em_.i64(j));
    Value *start = em_.constant(dt, 0);
    if (bias_) // the bias, or none where the vertex passes its weights instead (same +0.0 start as no bias)
      start = b_.CreateSelect(em_.present(0), Operand::of(s_.dtype).load(em_, bias_, oc), start);
    start = em_.splat(unsigned(V), start);
    for (int64_t r = 0; r < NR; ++r)
      for (int64_t v = 0; v < NV; ++v)
        init[slot(0, j, r, v)] = start;
  }
  Value *ocWeights = b_.CreateMul(inChannels_, em_.i64(KK)); // weights per output channel
  Value *wBlock = b_.CreateMul(oc0, ocWeights);
  // Adds input channel `ic` (all taps) into the accumulators of `set` (or of
  // the tap's set).
  auto channel = [&](Value *ic, Emitter::Carried &next, int64_t set) {
    Value *chan = b_.CreateMul(ic, inPlane);
    Value *wChan = b_.CreateAdd(wBlock, b_.CreateMul(ic, em_.i64(KK)));
    // Tap (kh, kw) of tile row r into `next`: `rowTaps` is kh * KW (a
    // constant, or a value in a rolled kernel-row loop), `setTap` the tap's
    // index as far as its accumulator set goes, `rowOff` and `enable` its
    // row's field offset and run-time flag; `wv` caches the tap's weights.
    auto tap = [&](Value *rowTaps, int64_t kw, int64_t setTap, int64_t r, Value *rowOff, Value *enable,
                   std::vector<Value *> &wv, Emitter::Carried &next) {
      const int64_t tapSet = tapSets ? setTap % sets : set;
      auto weight = [&](int64_t j) {
        if (!wv[size_t(j)]) {
          Value *idx = b_.CreateAdd(
              wChan, b_.CreateAdd(b_.CreateMul(em_.i64(j), ocWeights), b_.CreateAdd(rowTaps, em_.i64(kw))));
          wv[size_t(j)] = em_.splat(unsigned(V), weightsOperand_.load(em_, weights_, idx));
        }
        return wv[size_t(j)];
      };
      const int64_t colOff = t_.flat ? 0 : cols_[kw].offset;
      // Not inbounds: a kernel row in the padding (all lanes off) may lie outside the field.
      Value *row = b_.CreateGEP(em_.type(inOperand_.stored), in_, b_.CreateAdd(chan, rowOff));
      for (int64_t v = 0; v < NV; ++v) {
        std::vector<bool> on = lanes(kw, v);
        if (!any(on))
          continue;
        Value *col = b_.CreateAdd(b_.CreateMul(b_.CreateAdd(colStart, em_.i64(v * V)), em_.i64(SW)),
                                  em_.i64(colOff));
        Value *x = inOperand_.loadLanes(em_, row, col, on, t_.flat ? 1 : SW, enable);
        for (int64_t j = 0; j < ob; ++j) {
          const size_t k = slot(tapSet, j, r, v);
          next[k] = accum_.mulAdd(em_, weight(j), x, next[k]);
        }
      }
    };
    auto tapRow = [&](int64_t kh, int64_t kw, int64_t r, std::vector<Value *> &wv, Emitter::Carried &next) {
      const size_t ri = size_t(kh * NR + r);
      tap(em_.i64(kh * KW), kw, kh * KW + kw, r, rowOffset[ri], rowKind[ri] == Rows::Some ? rowValid[ri] : nullptr,
          wv, next);
    };
    // One tile row (rowsImmediate): a branch around each kernel row's taps.
    auto oneRow = [&](Value *valid, Value *rowTaps, int64_t setRow, Value *rowOff, Emitter::Carried &acc) {
      acc = em_.ifThen(valid, acc, [&](Emitter::Carried &in) {
        for (int64_t kw = 0; kw < KW; ++kw) {
          std::vector<Value *> wv(size_t(ob), nullptr);
          tap(rowTaps, kw, setRow + kw, 0, rowOff, nullptr, wv, in);
        }
      });
    };
    int64_t firstUnrolled = 0; // kernel rows before it ran in the rolled loop
    if (rollRows) {
      // A big kernel's rows as a loop over groups of `rollRows` rows (a
      // group's taps cover the accumulator sets a whole number of times, so
      // each tap keeps its set): the same taps in the same order, in code a
      // group long instead of a kernel long (ResNet's 7x7 stem).
      const int64_t groups = KH / rollRows;
      next = em_.forLoop(groups, next, [&](Value *g, const Emitter::Carried &cur) {
        Emitter::Carried acc = cur;
        for (int64_t i = 0; i < rollRows; ++i) {
          Value *kh = b_.CreateAdd(b_.CreateMul(g, em_.i64(rollRows)), em_.i64(i));
          oneRow(Window::oneRowInImage(em_, rowsImm_, kh), b_.CreateMul(kh, em_.i64(KW)), i * KW, oneRowOffset(kh),
                 acc);
        }
        return acc;
      });
      em_.keepLastLoopRolled();
      firstUnrolled = groups * rollRows;
    }
    for (int64_t kh = firstUnrolled; kh < KH; ++kh) {
      if (rowsImm_) {
        oneRow(rowValid[size_t(kh)], em_.i64(kh * KW), kh * KW, rowOffset[size_t(kh)], next);
        continue;
      }
      for (int64_t kw = 0; kw < KW; ++kw) {
        std::vector<Value *> wv(size_t(ob), nullptr);
        for (int64_t r = 0; r < NR; ++r)
          if (rowKind[size_t(kh * NR + r)] != Rows::None)
            tapRow(kh, kw, r, wv, next);
      }
    }
  };
  Emitter::Carried sum = em_.unrolledLoop(inChannels_, icStep, init, channel);
  // A body of several taps is long enough on its own: unrolling it (at run
  // time when the count is an immediate, fully when it is a small constant)
  // only lengthens the JIT (MobileNetV2's cold JIT -10 %, ResNet-50's -5 %, the
  // same run time). A 1x1 body is short; LLVM may unroll it.
  if (icStep == 1 && KK > 1)
    em_.keepLastLoopRolled();
  for (int64_t set = 1; set < nSets; ++set)
    for (size_t k = 0; k < size_t(chains); ++k)
      sum[k] = accum_.add(em_, sum[k], sum[size_t(set) * size_t(chains) + k]);
  Value *zero = Constant::getNullValue(vt);
  for (int64_t j = 0; j < ob; ++j)
    for (int64_t r = 0; r < NR; ++r)
      for (int64_t v = 0; v < NV; ++v) {
        std::vector<bool> on(size_t(V), true);
        if (constStart)
          for (int64_t l = 0; l < V; ++l)
            on[size_t(l)] = *constStart + v * V + l < t_.width;
        if (!any(on))
          continue;
        Value *x = sum[acc(j, r, v)];
        if (s_.relu)
          x = b_.CreateSelect(b_.CreateFCmpOLT(x, zero), zero, x);
        Value *oc = b_.CreateAdd(oc0, em_.i64(j));
        Value *idx = b_.CreateAdd(b_.CreateMul(oc, em_.i64(outPlane)),
                                  b_.CreateAdd(b_.CreateMul(b_.CreateAdd(ohl0, em_.i64(r)), em_.i64(t_.width)),
                                               b_.CreateAdd(colStart, em_.i64(v * V))));
        storeResultLanes(em_, s_.dtype, x, out_, idx, on);
      }
}

void ConvEmitter::run() {
  in_ = em_.field(0);
  weights_ = em_.field(1);
  bias_ = s_.hasBias ? em_.field(2) : nullptr;
  out_ = em_.field(s_.hasBias ? 3 : 2);
  size_t nextField = s_.hasBias ? 4 : 3;
  inChannels_ = channelsImmediate(s_) ? em_.immediate(nextField++) : em_.i64(s_.inChannels);
  // With the rows an immediate the code must not read the spec's row fields:
  // the types sharing it differ there.
  if (rowsImmediate(s_))
    rowsImm_ = em_.immediate(nextField++);
  if (s_.outChannels == 0 || s_.outRows == 0 || s_.outWidth == 0)
    return; // no outputs
  if (!rowsImm_)
    for (int64_t kh = 0; kh < s_.kernelH; ++kh)
      rows_.push_back(w_.rows(kh));
  for (int64_t kw = 0; kw < s_.kernelW; ++kw)
    cols_.push_back(w_.columns(kw));
  t_ = planTiling(s_);
  const int64_t groups = t_.rows / t_.nr;

  const std::vector<Chunks> runs = chunks();
  const int64_t L = t_.nv * t_.v;
  auto block = [&](Value *oc0, int64_t ob) {
    em_.forLoop(groups, [&](Value *g) {
      Value *ohl0 = b_.CreateMul(g, em_.i64(t_.nr));
      for (const Chunks &c : runs) {
        if (c.loop)
          em_.forLoop(c.count, [&](Value *k) {
            tile(oc0, ob, ohl0, 0, groups, b_.CreateAdd(em_.i64(c.start), b_.CreateMul(k, em_.i64(L))), std::nullopt);
          });
        else
          tile(oc0, ob, ohl0, 0, groups, em_.i64(c.start), c.start);
      }
    });
  };
  const int64_t full = s_.outChannels / t_.ob, rest = s_.outChannels % t_.ob;
  em_.forLoop(full, [&](Value *blk) { block(b_.CreateMul(blk, em_.i64(t_.ob)), t_.ob); });
  if (rest)
    block(em_.i64(full * t_.ob), rest);
}

} // namespace

void emit(Emitter &em, const ConvSpec &s) { ConvEmitter(em, s).run(); }

std::string key(const ConvSpec &s) {
  return fmt::format("conv:dtype={},ic={},oc={},inH={},inW={},inRowBegin={},inRows={},outRowBegin={},outRows={},"
                     "outW={},k={}x{},stride={}x{},dilation={}x{},pad={}x{},bias={:d},relu={:d}",
                     dtypeName(s.dtype), s.inChannels, s.outChannels, s.inHeight, s.inWidth, s.inRowBegin, s.inRows,
                     s.outRowBegin, s.outRows, s.outWidth, s.kernelH, s.kernelW, s.strideH, s.strideW, s.dilationH,
                     s.dilationW, s.padTop, s.padLeft, s.hasBias, s.relu) +
         (s.halfPartials ? ",halfPartials=1" : "") + (s.integer ? ",integer" + integerSuffix(*s.integer) : "");
}

} // namespace popc::codegen::detail
