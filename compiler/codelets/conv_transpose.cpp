// ConvTranspose over 1 to 3 spatial dims (padded to 3 with size-1 dims), one
// (n, output channel) plane per row: each output element gathers the input
// positions whose strided scatter lands on it.
#include "codelet.h"

namespace {

struct Geometry {
  int64_t channels, outChannels, group;
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
};

template <typename T>
inline void convTranspose(const T *x, const T *w, const T *bias, T *y, int64_t rows, int64_t firstRow,
                          const Geometry &g) {
  const int64_t inPlane = g.in[0] * g.in[1] * g.in[2], outPlane = g.out[0] * g.out[1] * g.out[2];
  const int64_t kVol = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t cPerGroup = g.channels / g.group, mPerGroup = g.outChannels / g.group;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = firstRow + r, n = row / g.outChannels, m = row % g.outChannels;
    const int64_t grp = m / mPerGroup, ml = m % mPerGroup;
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
          double acc = double(bias[m]);
          for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
            const int64_t t0 = o0 + g.pad[0] - k0 * g.dilation[0];
            if (t0 < 0 || t0 % g.stride[0] || t0 / g.stride[0] >= g.in[0])
              continue;
            for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
              const int64_t t1 = o1 + g.pad[1] - k1 * g.dilation[1];
              if (t1 < 0 || t1 % g.stride[1] || t1 / g.stride[1] >= g.in[1])
                continue;
              for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
                const int64_t t2 = o2 + g.pad[2] - k2 * g.dilation[2];
                if (t2 < 0 || t2 % g.stride[2] || t2 / g.stride[2] >= g.in[2])
                  continue;
                const int64_t s = ((t0 / g.stride[0]) * g.in[1] + t1 / g.stride[1]) * g.in[2] + t2 / g.stride[2];
                const int64_t k = (k0 * g.kernel[1] + k1) * g.kernel[2] + k2;
                for (int64_t cl = 0; cl < cPerGroup; ++cl) {
                  const int64_t c = grp * cPerGroup + cl;
                  acc += double(x[(n * g.channels + c) * inPlane + s]) * double(w[(c * mPerGroup + ml) * kVol + k]);
                }
              }
            }
          }
          y[r * outPlane + (o0 * g.out[1] + o1) * g.out[2] + o2] = T(acc);
        }
  }
}

} // namespace

#define POPC_CONV_TRANSPOSE(T, S)                                                                        \
  POPC_CODELET void popc_conv_transpose_##S(const T *x, const T *w, const T *bias, T *y, int64_t rows,  \
                                            int64_t firstRow, int64_t channels, int64_t outChannels,    \
                                            int64_t group, int64_t in0, int64_t in1, int64_t in2, int64_t out0, \
                                            int64_t out1, int64_t out2, int64_t k0, int64_t k1, int64_t k2, \
                                            int64_t s0, int64_t s1, int64_t s2, int64_t p0, int64_t p1,   \
                                            int64_t p2, int64_t d0, int64_t d1, int64_t d2) {             \
    const Geometry g{channels, outChannels, group, {in0, in1, in2}, {out0, out1, out2}, {k0, k1, k2},  \
                     {s0, s1, s2}, {p0, p1, p2}, {d0, d1, d2}};                                          \
    convTranspose(x, w, bias, y, rows, firstRow, g);                                                     \
  }
POPC_CONV_TRANSPOSE(float, f32)
POPC_CONV_TRANSPOSE(double, f64)
