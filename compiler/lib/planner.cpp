#include "compiler/lib/planner.h"

#include <algorithm>

namespace popc::lib {

std::vector<uint64_t> blockSizeCandidates(uint64_t n, uint64_t maxParts) {
  std::vector<uint64_t> sizes;
  const uint64_t limit = std::min(n, std::max<uint64_t>(maxParts, 1));
  for (uint64_t p = 1; p <= limit; ++p) {
    const uint64_t s = ceilDiv(n, p);
    if (sizes.empty() || sizes.back() != s)
      sizes.push_back(s);
  }
  if (sizes.empty())
    sizes.push_back(std::max<uint64_t>(n, 1));
  return sizes;
}

} // namespace popc::lib
