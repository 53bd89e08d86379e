// A tensor's mapping folded into cycles of intervals (format 5): a tensor laid
// out row by row over a few tiles stores one cycle of lanes, not a row each.
#include "formats/popef/popef.h"

#include <algorithm>

namespace popc::popef {

namespace fb = ::popef::fb;

namespace {
// Lanes of one cycle at most: bounds the search for where a cycle repeats.
constexpr size_t kMaxLanes = 4096;
constexpr uint32_t kNone = UINT32_MAX;
} // namespace

void foldMapping(fb::TensorT &t) {
  const std::vector<fb::TileInterval> in = std::move(t.mapping);
  t.mapping.clear();
  t.mapping_cycles.clear();
  const size_t n = in.size();
  // next[j]: the next interval on interval j's tile (a cycle's length).
  uint32_t tiles = 0;
  for (const fb::TileInterval &iv : in)
    tiles = std::max(tiles, iv.tile() + 1);
  std::vector<uint32_t> next(n, kNone), last(tiles, kNone);
  for (size_t j = n; j-- > 0;) {
    next[j] = last[in[j].tile()];
    last[in[j].tile()] = uint32_t(j);
  }
  for (size_t j = 0; j < n;) {
    const size_t lanes = next[j] == kNone ? 0 : next[j] - j;
    uint64_t repeat = 0;
    if (lanes && lanes <= kMaxLanes) {
      const uint64_t period = in[j + lanes].begin() - in[j].begin(); // sorted and contiguous
      // Repetition r of the lanes starting at j continues the cycle.
      auto continues = [&](uint64_t r) {
        if (j + (r + 1) * lanes > n)
          return false;
        for (size_t k = j; k < j + lanes; ++k) {
          const fb::TileInterval &a = in[k], &b = in[k + r * lanes];
          if (a.bytes() == 0 || b.tile() != a.tile() || b.bytes() != a.bytes() ||
              b.begin() != a.begin() + r * period || uint64_t(b.offset()) != a.offset() + r * a.bytes())
            return false;
        }
        return true;
      };
      while (repeat < UINT32_MAX && continues(repeat + 1))
        ++repeat;
    }
    if (repeat == 0) {
      t.mapping.push_back(in[j++]);
      continue;
    }
    t.mapping_cycles.emplace_back(uint32_t(t.mapping.size()), uint32_t(lanes), uint32_t(repeat));
    t.mapping.insert(t.mapping.end(), in.begin() + ptrdiff_t(j), in.begin() + ptrdiff_t(j + lanes));
    j += lanes * (repeat + 1);
  }
}

} // namespace popc::popef
