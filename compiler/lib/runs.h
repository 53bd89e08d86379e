// Byte runs of a tensor: the unit the exchange moves. Building run lists for
// broadcasts and permutations lives here so every lowering shares it.
#pragma once
#include "support/dtype.h"

#include <cstdint>
#include <vector>

namespace popc::lib {

struct Run {
  uint64_t byte = 0;  // first byte in the source tensor
  uint64_t bytes = 0;
};

class RunList {
public:
  // Appends a run, merging it into the previous one when contiguous.
  void add(uint64_t byte, uint64_t bytes);
  const std::vector<Run> &runs() const { return runs_; }
  uint64_t totalBytes() const { return total_; }
  bool empty() const { return runs_.empty(); }

private:
  std::vector<Run> runs_;
  uint64_t total_ = 0;
};

// Row-major strides of `shape` in elements.
std::vector<int64_t> stridesOf(const Shape &shape);

// Source runs of `in` (numpy-broadcast to `out`) for output elements
// [outBegin, outEnd), in output order.
void addBroadcastRuns(RunList &list, const Shape &out, const Shape &in, uint64_t outBegin,
                      uint64_t outEnd, size_t elemSize);

// Source runs of `in` for elements [outBegin, outEnd) of transpose(in, perm).
void addTransposeRuns(RunList &list, const Shape &in, const std::vector<int64_t> &perm,
                      uint64_t outBegin, uint64_t outEnd, size_t elemSize);

} // namespace popc::lib
