#include "compiler/lib/runs.h"

#include "support/error.h"

namespace popc::lib {

void RunList::add(uint64_t byte, uint64_t bytes) {
  if (bytes == 0)
    return;
  total_ += bytes;
  if (!runs_.empty() && runs_.back().byte + runs_.back().bytes == byte) {
    runs_.back().bytes += bytes;
    return;
  }
  runs_.push_back({byte, bytes});
}

std::vector<int64_t> stridesOf(const Shape &shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = int(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

namespace {
// Walks output elements [begin, end) of `outShape` keeping a multi-index, and
// adds the source element given by `srcStrides` (one per output dim).
void addStridedRuns(RunList &list, const Shape &outShape, const std::vector<int64_t> &srcStrides,
                    uint64_t begin, uint64_t end, size_t elemSize) {
  const size_t rank = outShape.size();
  std::vector<int64_t> index(rank, 0);
  uint64_t rem = begin;
  const std::vector<int64_t> outStrides = stridesOf(outShape);
  int64_t src = 0;
  for (size_t d = 0; d < rank; ++d) {
    index[d] = int64_t(rem / uint64_t(outStrides[d]));
    rem %= uint64_t(outStrides[d]);
    src += index[d] * srcStrides[d];
  }
  // Innermost dimension runs are added whole when contiguous in the source.
  const int64_t inner = rank ? outShape[rank - 1] : 1;
  const int64_t innerStride = rank ? srcStrides[rank - 1] : 0;
  uint64_t e = begin;
  while (e < end) {
    const int64_t pos = rank ? index[rank - 1] : 0;
    const uint64_t span = std::min<uint64_t>(end - e, uint64_t(inner - pos));
    if (innerStride == 1) {
      list.add(uint64_t(src) * elemSize, span * elemSize);
    } else {
      for (uint64_t i = 0; i < span; ++i)
        list.add(uint64_t(src + int64_t(i) * innerStride) * elemSize, elemSize);
    }
    e += span;
    if (rank == 0)
      break;
    src += int64_t(span) * innerStride;
    index[rank - 1] += int64_t(span);
    for (size_t d = rank - 1; d > 0 && index[d] == outShape[d]; --d) {
      src -= index[d] * srcStrides[d];
      index[d] = 0;
      index[d - 1] += 1;
      src += srcStrides[d - 1];
    }
  }
}
} // namespace

void addBroadcastRuns(RunList &list, const Shape &out, const Shape &in, uint64_t outBegin,
                      uint64_t outEnd, size_t elemSize) {
  if (in == out) {
    list.add(outBegin * elemSize, (outEnd - outBegin) * elemSize);
    return;
  }
  POPC_ASSERT(in.size() <= out.size());
  const std::vector<int64_t> inStrides = stridesOf(in);
  std::vector<int64_t> srcStrides(out.size(), 0);
  const size_t offset = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) {
    POPC_ASSERT(in[d] == out[d + offset] || in[d] == 1);
    srcStrides[d + offset] = in[d] == 1 ? 0 : inStrides[d];
  }
  addStridedRuns(list, out, srcStrides, outBegin, outEnd, elemSize);
}

void addTransposeRuns(RunList &list, const Shape &in, const std::vector<int64_t> &perm,
                      uint64_t outBegin, uint64_t outEnd, size_t elemSize) {
  const std::vector<int64_t> inStrides = stridesOf(in);
  Shape out(in.size());
  std::vector<int64_t> srcStrides(in.size());
  for (size_t d = 0; d < perm.size(); ++d) {
    out[d] = in[perm[d]];
    srcStrides[d] = inStrides[perm[d]];
  }
  addStridedRuns(list, out, srcStrides, outBegin, outEnd, elemSize);
}

} // namespace popc::lib
