// Convolution over 1 or 3 spatial dims (padded to 3 with size-1 dims), one
// (n, output channel) plane per row. 2-D convolutions use the generated,
// register-tiled kernels (compiler/codegen/conv.cpp) instead.
#include "codelet.h"

namespace {

struct Geometry {
  int64_t channels, outChannels, group;
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
};

template <typename T>
inline void convNd(const T *x, const T *w, const T *bias, T *y, int64_t rows, int64_t firstRow, const Geometry &g) {
  const int64_t inPlane = g.in[0] * g.in[1] * g.in[2], outPlane = g.out[0] * g.out[1] * g.out[2];
  const int64_t kVol = g.kernel[0] * g.kernel[1] * g.kernel[2];
  const int64_t cPerGroup = g.channels / g.group, mPerGroup = g.outChannels / g.group;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = firstRow + r, n = row / g.outChannels, m = row % g.outChannels, grp = m / mPerGroup;
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
          double acc = double(bias[m]);
          for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
            const int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
            if (i0 < 0 || i0 >= g.in[0])
              continue;
            for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
              const int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
              if (i1 < 0 || i1 >= g.in[1])
                continue;
              for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
                const int64_t i2 = o2 * g.stride[2] - g.pad[2] + k2 * g.dilation[2];
                if (i2 < 0 || i2 >= g.in[2])
                  continue;
                const int64_t s = (i0 * g.in[1] + i1) * g.in[2] + i2, k = (k0 * g.kernel[1] + k1) * g.kernel[2] + k2;
                for (int64_t cl = 0; cl < cPerGroup; ++cl)
                  acc += double(x[(n * g.channels + grp * cPerGroup + cl) * inPlane + s]) *
                         double(w[(m * cPerGroup + cl) * kVol + k]);
              }
            }
          }
          y[r * outPlane + (o0 * g.out[1] + o1) * g.out[2] + o2] = T(acc);
        }
  }
}

} // namespace

#define POPC_CONV_ND(T, S)                                                                               \
  POPC_CODELET void popc_conv_nd_##S(const T *x, const T *w, const T *bias, T *y, int64_t rows, int64_t firstRow, \
                                     int64_t channels, int64_t outChannels, int64_t group, int64_t in0,  \
                                     int64_t in1, int64_t in2, int64_t out0, int64_t out1, int64_t out2,  \
                                     int64_t k0, int64_t k1, int64_t k2, int64_t s0, int64_t s1, int64_t s2, \
                                     int64_t p0, int64_t p1, int64_t p2, int64_t d0, int64_t d1, int64_t d2) { \
    const Geometry g{channels, outChannels, group, {in0, in1, in2}, {out0, out1, out2}, {k0, k1, k2},  \
                     {s0, s1, s2}, {p0, p1, p2}, {d0, d1, d2}};                                          \
    convNd(x, w, bias, y, rows, firstRow, g);                                                            \
  }
POPC_CONV_ND(float, f32)
POPC_CONV_ND(double, f64)
