// Reading and writing popef executables. Every reader path verifies before
// use: the flatbuffers Verifier, then semantic checks (indices in range, every
// byte range inside its tile's memory, program tree well-formed).
#pragma once
#include "formats/popef/popef_generated.h"
#include "support/dtype.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace popc::popef {

// 2: load program, filled_at_load; 3: checks; 4: data segment; 5: exchange
// steps as pieces and placements (shared gathers) instead of copy records.
constexpr uint32_t kFormatVersion = 5;
// Older files hold copy records, which this build no longer reads.
constexpr uint32_t kMinFormatVersion = 5;

// Limits enforced by the reader (a file outside them is rejected as invalid).
constexpr uint64_t kMaxTiles = 1u << 20;              // num_ipus * tiles_per_ipu
constexpr uint64_t kMaxBytesPerTile = 16u << 20;      // 16 MiB
constexpr uint32_t kMaxWorkersPerTile = 64;
constexpr uint32_t kMaxProgramDepth = 64;             // program tree nesting, through calls
constexpr uint32_t kMaxRepeatCount = 1u << 30;
constexpr uint64_t kMaxVertexCycles = 1ull << 40;
constexpr uint64_t kMaxTensorBytes = 1ull << 40;

// A Copy record stands for 1 + repeat copies (popef.fbs).
// Length of an optional flatbuffer vector (absent = empty): every reader of a
// popef indexes vectors that a writer may have left out.
template <typename T> uint32_t len(const flatbuffers::Vector<T> *v) { return v ? v->size() : 0; }

inline uint64_t copyCount(const ::popef::fb::Copy &c) { return uint64_t(c.repeat()) + 1; }
inline uint64_t copyTotalBytes(const ::popef::fb::Copy &c) { return uint64_t(c.bytes()) * copyCount(c); }
// One past the last byte a record reads / writes on its tile.
inline uint64_t copySrcEnd(const ::popef::fb::Copy &c) {
  return uint64_t(c.src_offset()) + uint64_t(c.repeat()) * c.src_stride() + c.bytes();
}
inline uint64_t copyDstEnd(const ::popef::fb::Copy &c) {
  return uint64_t(c.dst_offset()) + uint64_t(c.repeat()) * c.dst_stride() + c.bytes();
}
// A single copy of `bytes` bytes.
inline ::popef::fb::Copy singleCopy(uint32_t srcTile, uint32_t srcOffset, uint32_t dstTile, uint32_t dstOffset,
                                    uint32_t bytes) {
  return ::popef::fb::Copy(srcTile, srcOffset, dstTile, dstOffset, bytes, 0, 0, 0);
}

// An exchange step's copies are stored as pieces and placements (format 5,
// popef.fbs); readers see them as the copy records they stand for.
// Bytes of the destination tile a piece spans, from its first byte to its last.
inline uint64_t pieceExtent(const ::popef::fb::Piece &p) { return uint64_t(p.repeat()) * p.dst_stride() + p.bytes(); }
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

// The bytes of a constant: its inline data, or its range of `content` (the
// whole file) in the data segment. Unchecked: for verified files, or after the
// verifier's range check.
std::span<const uint8_t> constantBytes(const ::popef::fb::ConstantData &c, std::span<const uint8_t> content);

// Bytes of a (verified) tensor: product(shape) * dtype size.
uint64_t tensorBytes(const ::popef::fb::Tensor &t);
Shape tensorShape(const ::popef::fb::Tensor &t);

// The flatbuffer part of a popef (everything but the data segment) must stay
// below this: flatbuffers' offsets are 32-bit and signed.
constexpr uint64_t kMaxScheduleBytes = FLATBUFFERS_MAX_BUFFER_SIZE - 1;

// Packs an executable with the "POPF" identifier and the checksum of every
// constant and code module. Deterministic.
// `segment`: bytes of constants kept out of the flatbuffer (format 4): entry i,
// if not empty, holds constants[i]'s bytes (whose `data` must then be empty)
// and goes to the data segment after the flatbuffer.
// `sizeHint`: the expected size of the flatbuffer, if known (saves regrowing it).
// Throws popc::Error when the flatbuffer part would reach kMaxScheduleBytes.
std::vector<uint8_t> serialize(const ::popef::fb::ExecutableT &exe, size_t sizeHint = 0,
                               std::span<const std::span<const uint8_t>> segment = {});
// The same, and frees the object tree piece by piece as it is packed, before
// the file's bytes are assembled (the compiler's peak memory: the tree, the
// packed flatbuffer and the file are each hundreds of MB on a large model).
// When it throws (the schedule is too large), `exe` is left as it was.
std::vector<uint8_t> serialize(::popef::fb::ExecutableT &&exe, size_t sizeHint = 0,
                               std::span<const std::span<const uint8_t>> segment = {});
// The checksum stored beside constant data and bitcode (XXH64, seed 0).
uint64_t checksum(std::span<const uint8_t> bytes);

// A popef file is the flatbuffer followed by a 16-byte trailer: "POPFXXH1" and
// the XXH64 of everything before it, so any corruption (a flipped copy offset
// as much as a flipped weight) is refused before the file is used.
constexpr size_t kTrailerBytes = 16;
// Appends (or replaces) the trailer of `bytes` (the flatbuffer, possibly
// already sealed). serialize() returns sealed bytes; fuzzers re-seal inputs.
void seal(std::vector<uint8_t> &bytes);
// True when the last kTrailerBytes of [data, data+size) are a trailer that
// matches the rest.
bool hasValidTrailer(const uint8_t *data, size_t size);
// Writes bytes to `path` atomically (temporary file + rename).
void writeFile(const std::string &path, std::span<const uint8_t> bytes);

// A verified executable, backed by an mmap of the file or by owned bytes.
class Executable {
public:
  // Throws popc::Error("<path>: <what is wrong>") for unreadable, truncated,
  // corrupt or semantically invalid files.
  // `threads`: host threads the semantic checks may use (the exchange steps').
  static std::shared_ptr<const Executable> open(const std::string &path, unsigned threads = 1);
  static std::shared_ptr<const Executable> fromBytes(std::vector<uint8_t> bytes,
                                                     const std::string &label = "<memory>");
  ~Executable();

  const ::popef::fb::Executable &root() const { return *root_; }
  // The bytes of constants[i] (verified: inline, or inside the data segment).
  std::span<const uint8_t> constant(uint32_t i) const;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string &label() const { return label_; }
  // Lets the kernel drop the mapped file's pages from this process (they stay
  // valid: a later read maps them again from the page cache). A runner calls
  // it once it has copied what it needs, so the file does not add to its
  // resident memory next to the tiles'. No effect on owned bytes.
  void releaseMappedPages() const;

private:
  Executable() = default;
  void verify(unsigned threads);
  std::string label_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  size_t contentSize_ = 0;      // the flatbuffer: size_ less the trailer
  void *mapping_ = nullptr;     // munmap on destruction if set
  std::vector<uint8_t> owned_;  // when built from bytes
  const ::popef::fb::Executable *root_ = nullptr;
};

} // namespace popc::popef
