// Format 5 stores the schedule by its shape (docs/popef-format.md): an
// exchange step as shared pieces and placements, a tensor's mapping as cycles
// of intervals, a tile's repeated vertices as one. The writer folds
// (setCopies, foldMapping, foldVertices); readers see the records, intervals
// and vertices they stand for, in order (forEachCopy, forEachInterval,
// forEachStoredVertex). Included by popef.h.
#pragma once
#include "formats/popef/popef_generated.h"

#include <cstdint>
#include <vector>

namespace popc::popef {

// An exchange step's copies are stored as pieces and placements (format 5,
// popef.fbs); readers see them as the copy records they stand for.
// Bytes of the destination tile a piece spans, from its first byte to its last.
inline uint64_t pieceExtent(const ::popef::fb::Piece &p) { return uint64_t(p.repeat()) * p.dst_stride() + p.bytes(); }
// One past the last byte a piece reads on its source tile (copySrcEnd's twin).
inline uint64_t pieceSrcEnd(const ::popef::fb::Piece &p) {
  return uint64_t(p.src_offset()) + uint64_t(p.repeat()) * p.src_stride() + p.bytes();
}
// Bytes a piece moves: all its copies.
inline uint64_t pieceTotalBytes(const ::popef::fb::Piece &p) { return uint64_t(p.bytes()) * (uint64_t(p.repeat()) + 1); }
// Prefix sums of the step's piece extents: placement `at` spans
// before[at.first_piece() + at.pieces()] - before[at.first_piece()] bytes.
std::vector<uint64_t> pieceExtentsBefore(const ::popef::fb::ExchangeStep &step);
// The same for pieceTotalBytes: the bytes placement `at` moves.
std::vector<uint64_t> pieceBytesBefore(const ::popef::fb::ExchangeStep &step);
// Placement `at`'s share of such prefix sums (its extent, or its bytes).
inline uint64_t placementSum(const std::vector<uint64_t> &before, const ::popef::fb::Placement &at) {
  return before[at.first_piece() + at.pieces()] - before[at.first_piece()];
}
// Whether some placement of a (verified) step uses piece k: a file may store
// pieces no placement uses, which stand for no copy. Linear in pieces and
// placements, not in the records.
std::vector<bool> piecesInUse(const ::popef::fb::ExchangeStep &step);
// Packs `records`, in their order, into the step's pieces and placements:
// consecutive records on one destination tile, each starting where the
// previous one's extent ends, make one placement; placements with the same
// pieces share them. Zero-byte records, which move nothing, are left out.
// Deterministic; stepCopies gives `records` back.
void setCopies(::popef::fb::ExchangeStepT &step, const std::vector<::popef::fb::Copy> &records);
// The number of copy records of a (verified) step, without expanding them.
uint64_t stepRecordCount(const ::popef::fb::ExchangeStep &step);
// Calls f(const Copy &) for each copy record of placement `at`, whose pieces
// are in `pieces` (the step's), in order.
template <typename F>
void forEachCopyOf(const ::popef::fb::Placement &at, const ::popef::fb::Piece *pieces, F &&f) {
  uint64_t dst = at.dst_offset();
  for (const ::popef::fb::Piece *p = pieces + at.first_piece(), *end = p + at.pieces(); p != end; ++p) {
    f(::popef::fb::Copy(p->src_tile(), p->src_offset(), at.dst_tile(), uint32_t(dst), p->bytes(), p->repeat(),
                        p->src_stride(), p->dst_stride()));
    dst += pieceExtent(*p);
  }
}
// Calls f(const Copy &) for each copy record of a verified step, in order.
template <typename F> void forEachCopy(const ::popef::fb::ExchangeStep &step, F &&f) {
  if (!step.pieces() || !step.placements())
    return;
  for (const ::popef::fb::Placement *at : *step.placements())
    forEachCopyOf(*at, reinterpret_cast<const ::popef::fb::Piece *>(step.pieces()->Data()), f);
}
// The copy records of a verified step, in order.
std::vector<::popef::fb::Copy> stepCopies(const ::popef::fb::ExchangeStep &step);

// A tensor's mapping is stored folded (format 5): cycles of intervals that
// repeat (popef.fbs, IntervalCycle). Calls f(const TileInterval &) for each
// interval it stands for, in tensor order (verified tensors).
template <typename F> void forEachInterval(const ::popef::fb::Tensor &t, F &&f) {
  const auto *m = t.mapping();
  const auto *cycles = t.mapping_cycles();
  const uint32_t n = m ? m->size() : 0, nc = cycles ? cycles->size() : 0;
  for (uint32_t j = 0, c = 0; j < n;) {
    if (c == nc || cycles->Get(c)->first() != j) {
      f(*m->Get(j++));
      continue;
    }
    const ::popef::fb::IntervalCycle *cycle = cycles->Get(c++);
    uint64_t period = 0;
    for (uint32_t k = j; k < j + cycle->lanes(); ++k)
      period += m->Get(k)->bytes();
    for (uint64_t i = 0; i <= cycle->repeat(); ++i)
      for (uint32_t k = j; k < j + cycle->lanes(); ++k) {
        const ::popef::fb::TileInterval *iv = m->Get(k);
        f(::popef::fb::TileInterval(iv->begin() + i * period, iv->bytes(), iv->tile(),
                                    uint32_t(iv->offset() + i * iv->bytes())));
      }
    j += cycle->lanes();
  }
}
// Calls f(const TileInterval &iv, uint64_t times) for each stored interval:
// with its repetitions, its tile holds iv.bytes() * times bytes of the tensor
// from iv.offset() on. (Per-tile totals without expanding the cycles.)
template <typename F> void forEachLane(const ::popef::fb::Tensor &t, F &&f) {
  const auto *m = t.mapping();
  const auto *cycles = t.mapping_cycles();
  const uint32_t n = m ? m->size() : 0, nc = cycles ? cycles->size() : 0;
  for (uint32_t j = 0, c = 0; j < n;) {
    const bool inCycle = c < nc && cycles->Get(c)->first() == j;
    const uint32_t lanes = inCycle ? cycles->Get(c)->lanes() : 1;
    const uint64_t times = inCycle ? uint64_t(cycles->Get(c)->repeat()) + 1 : 1;
    c += inCycle;
    for (uint32_t k = j; k < j + lanes; ++k)
      f(*m->Get(k), times);
    j += lanes;
  }
}
// Folds t.mapping (sorted by begin, contiguous) into cycles where intervals
// repeat; forEachInterval gives the intervals back. Deterministic.
void foldMapping(::popef::fb::TensorT &t);

// A compute set's vertices are stored folded (format 5): a vertex may stand
// for repetitions of itself (popef.fbs, VertexRepeat). The number of vertices
// a (verified) compute set stands for.
uint64_t vertexCount(const ::popef::fb::ComputeSet &cs);
// Calls f(const Vertex &v, uint64_t times, const VertexRepeat *r) for each
// stored vertex, in order: it stands for `times` vertices (r: its repeat
// record, or null when times is 1).
template <typename F> void forEachStoredVertex(const ::popef::fb::ComputeSet &cs, F &&f) {
  const auto *repeats = cs.vertex_repeats();
  const uint32_t n = cs.vertices() ? cs.vertices()->size() : 0, nr = repeats ? repeats->size() : 0;
  for (uint32_t v = 0, r = 0; v < n; ++v) {
    const ::popef::fb::VertexRepeat *rep = r < nr && repeats->Get(r)->vertex() == v ? repeats->Get(r++) : nullptr;
    f(*cs.vertices()->Get(v), rep ? uint64_t(rep->repeat()) + 1 : 1, rep);
  }
}
// The field offsets of repetition i of a stored vertex with `fields` fields.
inline void repeatedFieldOffsets(const ::popef::fb::ComputeSet &cs, const ::popef::fb::Vertex &v,
                                 const ::popef::fb::VertexRepeat &r, uint32_t fields, uint64_t i, uint32_t *out) {
  for (uint32_t f = 0; f < fields; ++f)
    out[f] = uint32_t(cs.field_offsets()->Get(v.fields_begin() + f) + i * cs.field_strides()->Get(r.strides_begin() + f));
}
// Folds consecutive vertices of one type on one tile whose field offsets step
// by constant strides into repeat records; `fields[t]`: type t's field count.
// forEachStoredVertex and repeatedFieldOffsets give the vertices back. Deterministic.
void foldVertices(::popef::fb::ComputeSetT &cs, const std::vector<uint32_t> &fields);

} // namespace popc::popef
