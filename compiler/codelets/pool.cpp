// Max/average pooling over 1 to 3 spatial dims, one (n, c) plane per row,
// with MaxPool's Indices output (flat indices into the whole input, spatial
// part row-major or, with storageOrder 1, column-major). Used for the cases
// the generated 2-D pooling kernels do not cover.
#include "codelet.h"

using namespace popc_codelets;

namespace {

struct Geometry {
  int64_t in[3], out[3], kernel[3], stride[3], pad[3], dilation[3];
};

template <typename T>
inline void pool(const T *in, T *out, int64_t *indices, int64_t rows, int64_t firstRow, int64_t isMax,
                 int64_t countIncludePad, int64_t storageOrder, int64_t writeIndices, const Geometry &g) {
  const int64_t inPlane = g.in[0] * g.in[1] * g.in[2], outPlane = g.out[0] * g.out[1] * g.out[2];
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
      for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
        for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
          double acc = 0;
          T best = T(0);
          int64_t bestIndex = -1, count = 0, padded = 0;
          for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0)
            for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1)
              for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
                const int64_t i0 = o0 * g.stride[0] - g.pad[0] + k0 * g.dilation[0];
                const int64_t i1 = o1 * g.stride[1] - g.pad[1] + k1 * g.dilation[1];
                const int64_t i2 = o2 * g.stride[2] - g.pad[2] + k2 * g.dilation[2];
                // Positions inside the explicit padding count for count_include_pad.
                const bool inPadded = i0 >= -g.pad[0] && i1 >= -g.pad[1] && i2 >= -g.pad[2] &&
                                      i0 < g.in[0] + g.pad[0] && i1 < g.in[1] + g.pad[1] && i2 < g.in[2] + g.pad[2];
                padded += inPadded;
                if (i0 < 0 || i1 < 0 || i2 < 0 || i0 >= g.in[0] || i1 >= g.in[1] || i2 >= g.in[2])
                  continue;
                const int64_t s = (i0 * g.in[1] + i1) * g.in[2] + i2;
                const T v = in[r * inPlane + s];
                ++count;
                if (isMax) {
                  if (bestIndex < 0 || key(v) > key(best)) {
                    best = v;
                    // Column-major spatial index for storage_order 1 (dims reversed).
                    const int64_t cm = (i2 * g.in[1] + i1) * g.in[0] + i0;
                    bestIndex = (firstRow + r) * inPlane + (storageOrder ? cm : s);
                  }
                } else {
                  acc += double(v);
                }
              }
          const int64_t o = r * outPlane + (o0 * g.out[1] + o1) * g.out[2] + o2;
          if (isMax) {
            out[o] = best;
            if (writeIndices)
              indices[o] = bestIndex;
          } else {
            const int64_t divisor = countIncludePad ? padded : count;
            out[o] = T(divisor ? acc / double(divisor) : 0.0);
          }
        }
}

} // namespace

#define POPC_POOL(T, S)                                                                                  \
  POPC_CODELET void popc_pool_nd_##S(const T *in, T *out, int64_t *indices, int64_t rows, int64_t firstRow, \
                                     int64_t isMax, int64_t countIncludePad, int64_t storageOrder,       \
                                     int64_t writeIndices, int64_t in0, int64_t in1, int64_t in2, int64_t out0, \
                                     int64_t out1, int64_t out2, int64_t k0, int64_t k1, int64_t k2, int64_t s0, \
                                     int64_t s1, int64_t s2, int64_t p0, int64_t p1, int64_t p2, int64_t d0, \
                                     int64_t d1, int64_t d2) {                                           \
    const Geometry g{{in0, in1, in2}, {out0, out1, out2}, {k0, k1, k2}, {s0, s1, s2}, {p0, p1, p2}, {d0, d1, d2}}; \
    pool(in, out, indices, rows, firstRow, isMax, countIncludePad, storageOrder, writeIndices, g);      \
  }
POPC_POOL(float, f32)
POPC_POOL(double, f64)
POPC_POOL(int8_t, i8)
POPC_POOL(uint8_t, u8)
POPC_POOL(int32_t, i32)
POPC_POOL(int64_t, i64)
