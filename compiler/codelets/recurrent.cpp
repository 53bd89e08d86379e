// RNN, GRU and LSTM (ONNX semantics, default activations) for one op on one
// tile: every direction, batch row and time step in order. The lowering
// supplies zero tensors for omitted optional inputs and a scratch field of
// 2*batch*hidden + (gates+1)*hidden + gates*hidden*(input+hidden) elements
// (the last part: one direction's W and R transposed, see gateBlock).
#include "codelet.h"

using namespace popc_codelets;

namespace {

enum Kind : int64_t { kRnn = 0, kGru = 1, kLstm = 2 };

inline double sigmoid(double x) { return 1.0 / (1.0 + __builtin_exp(-x)); }
inline double clipTo(double x, double clip) { return clip > 0 ? (x < -clip ? -clip : x > clip ? clip : x) : x; }

struct Sizes {
  int64_t kind, seq, batch, input, hidden, dirs, dirMode, layout, linearBeforeReset;
  double clip;
};

// M rows of the gates from `first` on, before their activations: each row
// sums bias, x.W and (when `recurrent`; the GRU candidate's recurrent part
// needs r first) its recurrent bias and h.R, in that order. The M sums are
// independent chains the host overlaps (M a constant, so they stay in
// registers) instead of one chain waiting on each add; each row's own order
// is the same as one row at a time. wT and rT are W and R transposed
// ([input][rows], [H][rows]), so the M rows' weights for one k are
// contiguous: one vector load, not a gather.
template <int64_t M, typename T>
inline void gateBlock(const T *x, const T *hb, const T *wT, const T *rT, const T *wb, const T *rb, T *gates,
                      int64_t first, int64_t rows, int64_t input, int64_t H, bool recurrent) {
  double acc[M];
  for (int64_t i = 0; i < M; ++i)
    acc[i] = double(wb[first + i]);
  for (int64_t k = 0; k < input; ++k)
    for (int64_t i = 0; i < M; ++i)
      acc[i] += double(x[k]) * double(wT[k * rows + first + i]);
  if (recurrent) {
    for (int64_t i = 0; i < M; ++i)
      acc[i] += double(rb[first + i]);
    for (int64_t k = 0; k < H; ++k)
      for (int64_t i = 0; i < M; ++i)
        acc[i] += double(hb[k]) * double(rT[k * rows + first + i]);
  }
  for (int64_t i = 0; i < M; ++i)
    gates[first + i] = T(acc[i]);
}

// Rows [row0, row0+n) of the `rows` gate rows: blocks of 8, then one at a time.
template <typename T>
inline void gateRows(const T *x, const T *hb, const T *wT, const T *rT, const T *wb, const T *rb, T *gates,
                     int64_t row0, int64_t n, int64_t rows, int64_t input, int64_t H, bool recurrent) {
  constexpr int64_t kBlock = 8;
  int64_t j = 0;
  for (; j + kBlock <= n; j += kBlock)
    gateBlock<kBlock>(x, hb, wT, rT, wb, rb, gates, row0 + j, rows, input, H, recurrent);
  for (; j < n; ++j)
    gateBlock<1>(x, hb, wT, rT, wb, rb, gates, row0 + j, rows, input, H, recurrent);
}

// dst[k][r] = src[r][k] for a rows x cols matrix.
template <typename T> inline void transpose(const T *src, T *dst, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < cols; ++k)
      dst[k * rows + r] = src[r * cols + k];
}

template <typename T>
inline void recurrent(const T *X, const T *W, const T *R, const T *B, const int32_t *seqLens, const T *initH,
                      const T *initC, const T *P, T *Y, T *Yh, T *Yc, T *scratch, const Sizes &s) {
  const int64_t H = s.hidden, G = s.kind == kLstm ? 4 : s.kind == kGru ? 3 : 1;
  T *h = scratch, *c = scratch + s.batch * H, *gates = c + s.batch * H, *tmp = gates + G * H;
  T *wT = tmp + H, *rT = wT + G * H * s.input;
  auto xAt = [&](int64_t t, int64_t b) { return X + (s.layout ? b * s.seq + t : t * s.batch + b) * s.input; };
  auto yAt = [&](int64_t t, int64_t d, int64_t b) {
    return Y + (s.layout ? (b * s.seq + t) * s.dirs + d : (t * s.dirs + d) * s.batch + b) * H;
  };
  auto stateAt = [&](T *base, int64_t d, int64_t b) { return base + (s.layout ? b * s.dirs + d : d * s.batch + b) * H; };
  auto cstateAt = [&](const T *base, int64_t d, int64_t b) {
    return base + (s.layout ? b * s.dirs + d : d * s.batch + b) * H;
  };
  for (int64_t d = 0; d < s.dirs; ++d) {
    const bool reverse = s.dirMode == 1 || (s.dirMode == 2 && d == 1);
    const T *w = W + d * G * H * s.input, *r = R + d * G * H * H, *wb = B + d * 2 * G * H, *rb = wb + G * H;
    const T *p = P + d * 3 * H;
    transpose(w, wT, G * H, s.input);
    transpose(r, rT, G * H, H);
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t j = 0; j < H; ++j) {
        h[b * H + j] = cstateAt(initH, d, b)[j];
        c[b * H + j] = cstateAt(initC, d, b)[j];
      }
    for (int64_t step = 0; step < s.seq; ++step)
      for (int64_t b = 0; b < s.batch; ++b) {
        const int64_t len = seqLens[b] < 0 ? 0 : seqLens[b] > s.seq ? s.seq : seqLens[b];
        if (step >= len) { // past this row's sequence: zero output, state kept
          T *y = yAt(step, d, b);
          for (int64_t j = 0; j < H; ++j)
            y[j] = T(0);
          continue;
        }
        const int64_t t = reverse ? len - 1 - step : step;
        const T *x = xAt(t, b);
        T *hb = h + b * H, *cb = c + b * H;
        for (int64_t g = 0; g < G; ++g)
          gateRows(x, hb, wT, rT, wb, rb, gates, g * H, H, G * H, s.input, H, /*recurrent=*/!(s.kind == kGru && g == 2));
        if (s.kind == kRnn) {
          for (int64_t j = 0; j < H; ++j)
            tmp[j] = T(__builtin_tanh(clipTo(double(gates[j]), s.clip)));
        } else if (s.kind == kGru) { // gates z r h
          for (int64_t j = 0; j < 2 * H; ++j)
            gates[j] = T(sigmoid(clipTo(double(gates[j]), s.clip)));
          for (int64_t j = 0; j < H; ++j) {
            const int64_t row = 2 * H + j;
            double rec = 0;
            if (s.linearBeforeReset) {
              rec = double(rb[row]);
              for (int64_t k = 0; k < H; ++k)
                rec += double(hb[k]) * double(r[row * H + k]);
              rec *= double(gates[H + j]);
            } else {
              rec = double(rb[row]);
              for (int64_t k = 0; k < H; ++k)
                rec += double(gates[H + k]) * double(hb[k]) * double(r[row * H + k]);
            }
            const double cand = __builtin_tanh(clipTo(double(gates[row]) + rec, s.clip));
            const double z = double(gates[j]);
            tmp[j] = T((1 - z) * cand + z * double(hb[j]));
          }
        } else { // LSTM gates i o f c, peepholes i o f
          for (int64_t j = 0; j < H; ++j) {
            const double cPrev = double(cb[j]);
            const double i = sigmoid(clipTo(double(gates[j]) + double(p[j]) * cPrev, s.clip));
            const double f = sigmoid(clipTo(double(gates[2 * H + j]) + double(p[2 * H + j]) * cPrev, s.clip));
            const double cand = __builtin_tanh(clipTo(double(gates[3 * H + j]), s.clip));
            const double cNew = f * cPrev + i * cand;
            const double o = sigmoid(clipTo(double(gates[H + j]) + double(p[H + j]) * cNew, s.clip));
            cb[j] = T(cNew);
            tmp[j] = T(o * __builtin_tanh(cNew));
          }
        }
        T *y = yAt(t, d, b);
        for (int64_t j = 0; j < H; ++j) {
          hb[j] = tmp[j];
          y[j] = tmp[j];
        }
      }
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t j = 0; j < H; ++j) {
        stateAt(Yh, d, b)[j] = h[b * H + j];
        stateAt(Yc, d, b)[j] = c[b * H + j];
      }
  }
}

} // namespace

#define POPC_RECURRENT(T, S)                                                                             \
  POPC_CODELET void popc_recurrent_##S(const T *X, const T *W, const T *R, const T *B, const int32_t *seqLens, \
                                       const T *initH, const T *initC, const T *P, T *Y, T *Yh, T *Yc,   \
                                       T *scratch, int64_t kind, int64_t seq, int64_t batch, int64_t input, \
                                       int64_t hidden, int64_t dirs, int64_t dirMode, int64_t layout,    \
                                       int64_t linearBeforeReset, int64_t clipBits) {                    \
    const Sizes s{kind, seq, batch, input, hidden, dirs, dirMode, layout, linearBeforeReset, asDouble(clipBits)}; \
    recurrent(X, W, R, B, seqLens, initH, initC, P, Y, Yh, Yc, scratch, s);                              \
  }
POPC_RECURRENT(float, f32)
POPC_RECURRENT(double, f64)
