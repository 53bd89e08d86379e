// Selection along rows: ArgMax/ArgMin and TopK. Rows are contiguous
// [rows][cols] (the lowering moves the op's axis innermost).
#include "codelet.h"

using namespace popc_codelets;

namespace {

// better(a, b): a ranks strictly before b.
template <typename K> inline bool better(K a, K b, bool largest) { return largest ? a > b : a < b; }

template <typename T>
inline void argReduce(const T *in, int64_t *out, int64_t rows, int64_t cols, int64_t isMax, int64_t selectLast) {
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = in + r * cols;
    int64_t best = 0;
    auto bestKey = key(row[0]);
    for (int64_t c = 1; c < cols; ++c) {
      const auto k = key(row[c]);
      if (better(k, bestKey, isMax != 0) || (selectLast && k == bestKey)) {
        best = c;
        bestKey = k;
      }
    }
    out[r] = best;
  }
}

// Keeps the k best of each row in values/indices, best first; equal values
// keep the lower index first (ONNX TopK). Insertion into the output arrays:
// no scratch memory beyond the outputs.
template <typename T>
inline void topK(const T *in, T *values, int64_t *indices, int64_t rows, int64_t cols, int64_t k, int64_t largest) {
  for (int64_t r = 0; r < rows; ++r) {
    const T *row = in + r * cols;
    T *v = values + r * k;
    int64_t *ix = indices + r * k;
    int64_t filled = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const auto kc = key(row[c]);
      int64_t pos = filled;
      while (pos > 0 && better(kc, key(v[pos - 1]), largest != 0))
        --pos;
      if (pos >= k)
        continue;
      const int64_t last = filled < k ? filled : k - 1;
      for (int64_t j = last; j > pos; --j) {
        v[j] = v[j - 1];
        ix[j] = ix[j - 1];
      }
      v[pos] = row[c];
      ix[pos] = c;
      if (filled < k)
        ++filled;
    }
  }
}

} // namespace

#define POPC_SELECT(T, S)                                                                                \
  POPC_CODELET void popc_argreduce_##S(const T *in, int64_t *out, int64_t rows, int64_t cols, int64_t isMax, \
                                       int64_t selectLast) {                                            \
    argReduce(in, out, rows, cols, isMax, selectLast);                                                   \
  }                                                                                                      \
  POPC_CODELET void popc_topk_##S(const T *in, T *values, int64_t *indices, int64_t rows, int64_t cols,  \
                                  int64_t k, int64_t largest) {                                          \
    topK(in, values, indices, rows, cols, k, largest);                                                   \
  }
POPC_FOR_EACH_DTYPE(POPC_SELECT)
