// An exchange step's copy records, packed into pieces and placements (format 5)
// and expanded back. Packing is where the file shrinks: one gather sent to
// many tiles is stored once.
#include "formats/popef/popef.h"

#include <cstring>
#include <unordered_map>
#include <xxhash.h>

namespace popc::popef {

namespace fb = ::popef::fb;

void setCopies(fb::ExchangeStepT &step, const std::vector<fb::Copy> &records) {
  step.pieces.clear();
  step.placements.clear();
  // A placement's pieces by their hash: (first piece, count) of the first
  // placement that had them.
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> known;
  std::vector<fb::Piece> run;
  for (size_t i = 0; i < records.size();) {
    const fb::Copy &head = records[i];
    if (head.bytes() == 0) {
      ++i;
      continue;
    }
    run.clear();
    uint64_t next = head.dst_offset();
    for (; i < records.size(); ++i) {
      const fb::Copy &c = records[i];
      if (c.bytes() == 0)
        continue;
      if (c.dst_tile() != head.dst_tile() || c.dst_offset() != next)
        break;
      run.emplace_back(c.src_tile(), c.src_offset(), c.bytes(), c.repeat(), c.src_stride(), c.dst_stride());
      next = copyDstEnd(c);
    }
    const size_t bytes = run.size() * sizeof(fb::Piece);
    auto [it, added] = known.try_emplace(XXH3_64bits(run.data(), bytes), uint32_t(step.pieces.size()),
                                         uint32_t(run.size()));
    const auto [first, count] = it->second;
    const bool same = !added && count == run.size() && std::memcmp(&step.pieces[first], run.data(), bytes) == 0;
    if (!same) // new pieces (or a hash collision: stored again)
      step.pieces.insert(step.pieces.end(), run.begin(), run.end());
    const uint32_t at = same ? first : uint32_t(step.pieces.size() - run.size());
    step.placements.emplace_back(head.dst_tile(), head.dst_offset(), at, uint32_t(run.size()));
  }
  // Their exact sizes: a compiler holds every step's records until the file
  // is packed (ViT-B/16: 0.6 GB of them), and growth by doubling left up to
  // half of that unused.
  step.pieces.shrink_to_fit();
  step.placements.shrink_to_fit();
}

uint64_t stepRecordCount(const fb::ExchangeStep &step) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < len(step.placements()); ++i)
    n += step.placements()->Get(i)->pieces();
  return n;
}

namespace {
template <typename Measure> std::vector<uint64_t> prefixSums(const fb::ExchangeStep &step, Measure measure) {
  std::vector<uint64_t> before(size_t(len(step.pieces())) + 1, 0);
  for (uint32_t k = 0; k < len(step.pieces()); ++k)
    before[k + 1] = before[k] + measure(*step.pieces()->Get(k));
  return before;
}
} // namespace

std::vector<uint64_t> pieceExtentsBefore(const fb::ExchangeStep &step) { return prefixSums(step, pieceExtent); }

std::vector<uint64_t> pieceBytesBefore(const fb::ExchangeStep &step) { return prefixSums(step, pieceTotalBytes); }

std::vector<bool> piecesInUse(const fb::ExchangeStep &step) {
  // +1 where a placement's pieces begin, -1 past their end: the running sum is
  // how many placements use each piece.
  const uint32_t n = len(step.pieces());
  std::vector<int64_t> delta(size_t(n) + 1, 0);
  for (uint32_t i = 0; i < len(step.placements()); ++i) {
    const fb::Placement *at = step.placements()->Get(i);
    delta[at->first_piece()]++;
    delta[uint64_t(at->first_piece()) + at->pieces()]--;
  }
  std::vector<bool> used(n);
  int64_t users = 0;
  for (uint32_t k = 0; k < n; ++k)
    used[k] = (users += delta[k]) > 0;
  return used;
}

std::vector<fb::Copy> stepCopies(const fb::ExchangeStep &step) {
  std::vector<fb::Copy> out;
  out.reserve(stepRecordCount(step));
  forEachCopy(step, [&](const fb::Copy &c) { out.push_back(c); });
  return out;
}

} // namespace popc::popef
