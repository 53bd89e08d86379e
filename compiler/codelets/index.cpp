// Ops driven by run-time indices: Gather, GatherElements, ScatterElements,
// OneHot. Negative indices count from the end; an index outside the axis
// (undefined in ONNX) reads zeros / is ignored instead of touching memory
// outside the fields, and Gather's checked variant also reports it.
#include "codelet.h"

using namespace popc_codelets;

namespace {

template <typename I> inline bool resolve(I raw, int64_t dim, int64_t &index) {
  int64_t i = int64_t(raw);
  if (i < 0)
    i += dim;
  index = i;
  return i >= 0 && i < dim;
}

// out[o][j][:] = data[o][idx[j]][:], for a block of `outer` rows and `n` indices.
template <typename E, typename I>
inline void gather(const E *data, const I *idx, E *out, int64_t outer, int64_t axisDim, int64_t n, int64_t inner) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < n; ++j) {
      E *dst = out + (o * n + j) * inner;
      int64_t i;
      if (!resolve(idx[j], axisDim, i)) {
        for (int64_t e = 0; e < inner; ++e)
          dst[e] = 0;
        continue;
      }
      const E *src = data + (o * axisDim + i) * inner;
      for (int64_t e = 0; e < inner; ++e)
        dst[e] = src[e];
    }
}

// gather() that also reports the first index outside the axis: status is
// [1, index, position] (position = base + j), or [0, 0, 0] when all are inside.
// The runtime reads it after the compute set (popef Check) and stops the run.
template <typename E, typename I>
inline void gatherChecked(const E *data, const I *idx, E *out, int64_t *status, int64_t outer, int64_t axisDim,
                          int64_t n, int64_t inner, int64_t base) {
  status[0] = status[1] = status[2] = 0;
  for (int64_t j = 0; j < n; ++j) {
    int64_t i;
    if (!resolve(idx[j], axisDim, i)) {
      status[0] = 1;
      status[1] = int64_t(idx[j]);
      status[2] = base + j;
      break;
    }
  }
  gather(data, idx, out, outer, axisDim, n, inner);
}

// Shapes travel as 8 dims (unused trailing dims are 1).
struct Dims {
  int64_t d[8];
};
inline int64_t volume(const Dims &s, int64_t rank) {
  int64_t v = 1;
  for (int64_t i = 0; i < rank; ++i)
    v *= s.d[i];
  return v;
}
// Offset in `shape` of the element with multi-index `at`, where dim `axis` is replaced by `axisIndex`.
inline int64_t offsetWith(const Dims &shape, const int64_t *at, int64_t rank, int64_t axis, int64_t axisIndex) {
  int64_t off = 0;
  for (int64_t i = 0; i < rank; ++i)
    off = off * shape.d[i] + (i == axis ? axisIndex : at[i]);
  return off;
}
inline void unravel(int64_t flat, const Dims &shape, int64_t rank, int64_t *at) {
  for (int64_t i = rank - 1; i >= 0; --i) {
    at[i] = flat % shape.d[i];
    flat /= shape.d[i];
  }
}

// GatherElements: out[p] = data[p with p[axis] = idx[p]], out shaped like idx.
template <typename E, typename I>
inline void gatherElements(const E *data, const I *idx, E *out, int64_t axis, int64_t rank, const Dims &dataShape,
                           const Dims &idxShape) {
  const int64_t n = volume(idxShape, rank);
  int64_t at[8];
  for (int64_t p = 0; p < n; ++p) {
    unravel(p, idxShape, rank, at);
    int64_t i;
    out[p] = resolve(idx[p], dataShape.d[axis], i) ? data[offsetWith(dataShape, at, rank, axis, i)] : E(0);
  }
}

// ScatterElements: out = data; out[p with p[axis] = idx[p]] (op)= updates[p].
// reduction: 0 none, 1 add, 2 mul, 3 max, 4 min.
template <typename T>
inline void combine(T &dst, T v, int64_t reduction) {
  if (reduction == 1)
    dst = T(dst + v);
  else if (reduction == 2)
    dst = T(dst * v);
  else if (reduction == 3)
    dst = dst > v ? dst : v;
  else if (reduction == 4)
    dst = dst < v ? dst : v;
  else
    dst = v;
}
inline void combine(Half &dst, Half v, int64_t reduction) {
  dst = v; // float16 reductions are refused by the lowering
}
inline void combine(bool &dst, bool v, int64_t reduction) {
  dst = reduction == 1 || reduction == 3 ? (dst || v) : reduction == 2 || reduction == 4 ? (dst && v) : v;
}

template <typename T, typename I>
inline void scatterElements(const T *data, const I *idx, const T *updates, T *out, int64_t axis, int64_t rank,
                            int64_t reduction, const Dims &dataShape, const Dims &idxShape) {
  const int64_t total = volume(dataShape, rank);
  for (int64_t p = 0; p < total; ++p)
    out[p] = data[p];
  const int64_t n = volume(idxShape, rank);
  int64_t at[8];
  for (int64_t p = 0; p < n; ++p) {
    unravel(p, idxShape, rank, at);
    int64_t i;
    if (resolve(idx[p], dataShape.d[axis], i))
      combine(out[offsetWith(dataShape, at, rank, axis, i)], updates[p], reduction);
  }
}

// OneHot, one row per index: out[r][d] = values[d == index ? 1 : 0].
template <typename E, typename I>
inline void oneHot(const I *idx, const E *values, E *out, int64_t rows, int64_t depth) {
  for (int64_t r = 0; r < rows; ++r) {
    int64_t hot;
    const bool valid = resolve(idx[r], depth, hot);
    for (int64_t d = 0; d < depth; ++d)
      out[r * depth + d] = values[valid && d == hot ? 1 : 0];
  }
}

} // namespace

#define POPC_DIMS(p) Dims{{p##0, p##1, p##2, p##3, p##4, p##5, p##6, p##7}}
#define POPC_DIM_ARGS(p)                                                                                 \
  int64_t p##0, int64_t p##1, int64_t p##2, int64_t p##3, int64_t p##4, int64_t p##5, int64_t p##6, int64_t p##7

#define POPC_BY_INDEX(E, B, I, IS)                                                                       \
  POPC_CODELET void popc_gather_e##B##_##IS(const E *data, const I *idx, E *out, int64_t outer, int64_t axisDim, \
                                            int64_t n, int64_t inner) {                                  \
    gather(data, idx, out, outer, axisDim, n, inner);                                                    \
  }                                                                                                      \
  POPC_CODELET void popc_gather_checked_e##B##_##IS(const E *data, const I *idx, E *out, int64_t *status, \
                                                    int64_t outer, int64_t axisDim, int64_t n,           \
                                                    int64_t inner, int64_t base) {                       \
    gatherChecked(data, idx, out, status, outer, axisDim, n, inner, base);                               \
  }                                                                                                      \
  POPC_CODELET void popc_gather_elements_e##B##_##IS(const E *data, const I *idx, E *out, int64_t axis,  \
                                                     int64_t rank, POPC_DIM_ARGS(d), POPC_DIM_ARGS(i)) { \
    gatherElements(data, idx, out, axis, rank, POPC_DIMS(d), POPC_DIMS(i));                              \
  }

#define POPC_BY_SIZE(E, B)                                                                               \
  POPC_BY_INDEX(E, B, int32_t, i32)                                                                      \
  POPC_BY_INDEX(E, B, int64_t, i64)                                                                      \
  POPC_ONEHOT(E, B, float, f32)                                                                          \
  POPC_ONEHOT(E, B, double, f64)                                                                         \
  POPC_ONEHOT(E, B, int8_t, i8)                                                                          \
  POPC_ONEHOT(E, B, int16_t, i16)                                                                        \
  POPC_ONEHOT(E, B, int32_t, i32)                                                                        \
  POPC_ONEHOT(E, B, int64_t, i64)                                                                        \
  POPC_ONEHOT(E, B, uint8_t, u8)

#define POPC_ONEHOT(E, B, I, IS)                                                                         \
  POPC_CODELET void popc_onehot_e##B##_##IS(const I *idx, const E *values, E *out, int64_t rows, int64_t depth) { \
    oneHot(idx, values, out, rows, depth);                                                               \
  }

POPC_FOR_EACH_ELEMENT_SIZE(POPC_BY_SIZE)

#define POPC_SCATTER(T, S)                                                                               \
  POPC_CODELET void popc_scatter_elements_##S##_i32(const T *data, const int32_t *idx, const T *updates, T *out, \
                                                    int64_t axis, int64_t rank, int64_t reduction,       \
                                                    POPC_DIM_ARGS(d), POPC_DIM_ARGS(i)) {               \
    scatterElements(data, idx, updates, out, axis, rank, reduction, POPC_DIMS(d), POPC_DIMS(i));         \
  }                                                                                                      \
  POPC_CODELET void popc_scatter_elements_##S##_i64(const T *data, const int64_t *idx, const T *updates, T *out, \
                                                    int64_t axis, int64_t rank, int64_t reduction,       \
                                                    POPC_DIM_ARGS(d), POPC_DIM_ARGS(i)) {               \
    scatterElements(data, idx, updates, out, axis, rank, reduction, POPC_DIMS(d), POPC_DIMS(i));         \
  }
POPC_FOR_EACH_DTYPE(POPC_SCATTER)
