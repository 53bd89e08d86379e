// Row-wise ops along one axis (moved innermost by the lowering): Hardmax,
// CumSum, InstanceNormalization, LRN.
#include "codelet.h"

using namespace popc_codelets;

namespace {

template <typename T> inline T one() { return T(1); }
template <> inline Half one<Half>() { return Half{0x3c00}; }
template <typename T> inline T zero() { return T(0); }
template <> inline Half zero<Half>() { return Half{0}; }

// out[r][c] = 1 at the first maximum of row r, else 0.
template <typename T> inline void hardmax(const T *in, T *out, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c)
      if (key(in[r * cols + c]) > key(in[r * cols + best]))
        best = c;
    for (int64_t c = 0; c < cols; ++c)
      out[r * cols + c] = c == best ? one<T>() : zero<T>();
  }
}

template <typename T>
inline void cumsum(const T *in, T *out, int64_t rows, int64_t cols, int64_t exclusive, int64_t reverse) {
  for (int64_t r = 0; r < rows; ++r) {
    T acc = T(0);
    for (int64_t i = 0; i < cols; ++i) {
      const int64_t c = reverse ? cols - 1 - i : i;
      if (exclusive) {
        out[r * cols + c] = acc;
        acc = T(acc + in[r * cols + c]);
      } else {
        acc = T(acc + in[r * cols + c]);
        out[r * cols + c] = acc;
      }
    }
  }
}

// Rows are (n, c) planes; row r of this vertex is global row firstRow + r, channel (firstRow + r) % channels.
template <typename T>
inline void instanceNorm(const T *in, const T *scale, const T *bias, T *out, int64_t rows, int64_t cols,
                         int64_t firstRow, int64_t channels, int64_t epsilonBits) {
  const double eps = asDouble(epsilonBits);
  for (int64_t r = 0; r < rows; ++r) {
    const T *x = in + r * cols;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < cols; ++i)
      mean += double(x[i]);
    mean /= double(cols);
    for (int64_t i = 0; i < cols; ++i)
      var += (double(x[i]) - mean) * (double(x[i]) - mean);
    var /= double(cols);
    const int64_t ch = (firstRow + r) % channels;
    const double inv = 1.0 / __builtin_sqrt(var + eps);
    for (int64_t i = 0; i < cols; ++i)
      out[r * cols + i] = T((double(x[i]) - mean) * inv * double(scale[ch]) + double(bias[ch]));
  }
}

// LRN across channels: rows are positions, cols the channels.
template <typename T>
inline void lrn(const T *in, T *out, int64_t rows, int64_t cols, int64_t size, int64_t alphaBits, int64_t betaBits,
                int64_t biasBits) {
  const double alpha = asDouble(alphaBits), beta = asDouble(betaBits), bias = asDouble(biasBits);
  const int64_t before = (size - 1) / 2, after = size - 1 - before; // floor / ceil of (size-1)/2
  for (int64_t r = 0; r < rows; ++r) {
    const T *x = in + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      double sq = 0;
      const int64_t lo = c - before < 0 ? 0 : c - before, hi = c + after >= cols ? cols - 1 : c + after;
      for (int64_t j = lo; j <= hi; ++j)
        sq += double(x[j]) * double(x[j]);
      out[r * cols + c] = T(double(x[c]) / __builtin_pow(bias + alpha / double(size) * sq, beta));
    }
  }
}

} // namespace

#define POPC_HARDMAX(T, S)                                                                               \
  POPC_CODELET void popc_hardmax_##S(const T *in, T *out, int64_t rows, int64_t cols) { hardmax(in, out, rows, cols); }
POPC_HARDMAX(float, f32)
POPC_HARDMAX(double, f64)
POPC_HARDMAX(Half, f16)

#define POPC_CUMSUM(T, S)                                                                                \
  POPC_CODELET void popc_cumsum_##S(const T *in, T *out, int64_t rows, int64_t cols, int64_t exclusive, \
                                    int64_t reverse) {                                                  \
    cumsum(in, out, rows, cols, exclusive, reverse);                                                     \
  }
POPC_CUMSUM(float, f32)
POPC_CUMSUM(double, f64)
POPC_CUMSUM(int32_t, i32)
POPC_CUMSUM(int64_t, i64)

#define POPC_NORMS(T, S)                                                                                 \
  POPC_CODELET void popc_instance_norm_##S(const T *in, const T *scale, const T *bias, T *out, int64_t rows, \
                                           int64_t cols, int64_t firstRow, int64_t channels,             \
                                           int64_t epsilonBits) {                                        \
    instanceNorm(in, scale, bias, out, rows, cols, firstRow, channels, epsilonBits);                     \
  }                                                                                                      \
  POPC_CODELET void popc_lrn_##S(const T *in, T *out, int64_t rows, int64_t cols, int64_t size, int64_t alphaBits, \
                                 int64_t betaBits, int64_t biasBits) {                                   \
    lrn(in, out, rows, cols, size, alphaBits, betaBits, biasBits);                                       \
  }
POPC_NORMS(float, f32)
POPC_NORMS(double, f64)
