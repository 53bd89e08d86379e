// Compressed popefs: the schedule (tensors, vertices, exchange pieces; the
// flatbuffer) is most of a file beyond its weights and compresses 5-13x; the
// weights do not compress and must stay mappable, so they are stored as they
// are. Layout (little-endian; docs/popef-format.md):
//
//   0  "POPFZST1"
//   8  u64 schedule bytes (decompressed)
//  16  u64 frame bytes (the zstd frame follows the header, at 64)
//  24  u64 segment start: where the data segment began in the uncompressed
//      file (constants' offsets count from it, unchanged by compression)
//  32  u64 segment offset in this file (a multiple of 64)
//  40  u64 segment bytes
//  48  u64 XXH64 of the decompressed schedule (finds it in a ScheduleCache)
//  56  u64 filter: 0 none, 1 columns (below)
//  64  zstd frame (content size and checksum set), zero padding to 64,
//      the data segment, the trailer ("POPFXXH1", XXH64 of all before it).
//
// The columns filter: the schedule's big vectors of fixed-size records
// (exchange pieces and placements, tensor intervals, vertices, field offsets)
// are stored field by field, each field as differences from the previous
// record's (mod 2^32). Neighbouring records differ by small regular steps (the
// next source tile, the next offset), which zstd then finds: GoogLeNet's
// schedule compresses to 2.5 MB instead of 6.5 MB. Only the records' bytes
// change; the flatbuffer's tables and offsets do not, so a reader finds the
// same vectors after the flatbuffers Verifier and undoes it in place.
#include "formats/popef/popef.h"
#include "formats/popef/compressed.h"

#include "support/allocator.h"
#include "support/error.h"
#include "support/parallel.h"

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>

namespace popc::popef {

namespace {

constexpr char kMagic[8] = {'P', 'O', 'P', 'F', 'Z', 'S', 'T', '1'};
constexpr size_t kHeaderBytes = 64;

uint64_t align64(uint64_t n) { return (n + 63) / 64 * 64; }

void put64(std::vector<uint8_t> &out, size_t at, uint64_t v) { std::memcpy(out.data() + at, &v, 8); }
uint64_t get64(std::span<const uint8_t> in, size_t at) {
  uint64_t v = 0;
  std::memcpy(&v, in.data() + at, 8);
  return v;
}

constexpr uint32_t kFilterNone = 0, kFilterColumns = 1;

// A vector of `records` records of `words` 32-bit words, at byte `at` of the schedule.
struct Columns {
  size_t at;
  size_t records;
  size_t words;
};

// The vectors the columns filter rewrites, in a fixed order. `exe` must have
// passed the flatbuffers Verifier (every vector inside `schedule`).
std::vector<Columns> columnVectors(const ::popef::fb::Executable &exe, const uint8_t *schedule) {
  namespace fb = ::popef::fb;
  std::vector<Columns> out;
  auto add = [&](const auto *v, size_t recordBytes) {
    static_assert(alignof(fb::Piece) >= 4);
    if (v && v->size() > 1)
      out.push_back({size_t(reinterpret_cast<const uint8_t *>(v->Data()) - schedule), v->size(), recordBytes / 4});
  };
  for (uint32_t e = 0; e < len(exe.exchanges()); ++e) {
    const fb::ExchangeStep *x = exe.exchanges()->Get(e);
    add(x->pieces(), sizeof(fb::Piece));
    add(x->placements(), sizeof(fb::Placement));
  }
  for (uint32_t t = 0; t < len(exe.tensors()); ++t)
    add(exe.tensors()->Get(t)->mapping(), sizeof(fb::TileInterval));
  for (uint32_t c = 0; c < len(exe.compute_sets()); ++c) {
    const fb::ComputeSet *x = exe.compute_sets()->Get(c);
    add(x->vertices(), sizeof(fb::Vertex));
    add(x->field_offsets(), sizeof(uint32_t));
  }
  static_assert(sizeof(fb::Piece) % 4 == 0 && sizeof(fb::Placement) % 4 == 0 && sizeof(fb::TileInterval) % 4 == 0 &&
                sizeof(fb::Vertex) % 4 == 0);
  return out;
}

// Records -> fields of differences (forward) or back (inverse), in place.
void transform(uint8_t *bytes, const Columns &c, bool forward, std::vector<uint32_t> &in) {
  const size_t n = c.records, w = c.words;
  in.resize(n * w);
  std::memcpy(in.data(), bytes, n * w * 4);
  uint32_t *out = reinterpret_cast<uint32_t *>(bytes); // the Verifier checked the vector's alignment
  for (size_t f = 0; f < w; ++f) {
    uint32_t prev = 0;
    if (forward)
      for (size_t i = 0; i < n; ++i) {
        out[f * n + i] = in[i * w + f] - prev;
        prev = in[i * w + f];
      }
    else
      for (size_t i = 0; i < n; ++i)
        out[i * w + f] = prev += in[f * n + i];
  }
}

void transformAll(uint8_t *schedule, const std::vector<Columns> &vectors, bool forward, unsigned threads) {
  parallelFor(
      vectors.size(),
      [&](size_t i) {
        std::vector<uint32_t> scratch; // freed with the call (a ViT-sized vector is hundreds of MB)
        transform(schedule + vectors[i].at, vectors[i], forward, scratch);
      },
      threads);
}

} // namespace

std::string compressorVersion() { return std::string("zstd ") + ZSTD_versionString(); }

bool isCompressed(std::span<const uint8_t> bytes) {
  return bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0;
}

std::vector<uint8_t> compress(std::vector<uint8_t> sealed, int level) {
  POPC_ASSERT(sealed.size() > kTrailerBytes && !isCompressed(sealed));
  const size_t contentBytes = sealed.size() - kTrailerBytes;
  // The schedule ends where the data segment begins: at the first constant
  // stored there (the writer puts the segment right after the flatbuffer).
  const auto *exe = ::popef::fb::GetExecutable(sealed.data());
  uint64_t segmentStart = contentBytes;
  if (exe->constants())
    for (const ::popef::fb::ConstantData *c : *exe->constants())
      if (c->size())
        segmentStart = std::min<uint64_t>(segmentStart, c->offset());
  const uint64_t segmentBytes = contentBytes - segmentStart;
  const uint64_t scheduleXxh64 = checksum({sealed.data(), size_t(segmentStart)});
  // In place: the file's bytes are the compiler's largest buffer (ViT-B/16's
  // schedule alone is 0.6 GB), so the filter, and then the compressed file,
  // reuse them.
  transformAll(sealed.data(), columnVectors(*exe, sealed.data()), true, 2);

  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  POPC_ASSERT(cctx);
  for (auto [parameter, value] : {std::pair{ZSTD_c_compressionLevel, std::clamp(level, 1, ZSTD_maxCLevel())},
                                   std::pair{ZSTD_c_checksumFlag, 1}, std::pair{ZSTD_c_contentSizeFlag, 1}})
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx.get(), parameter, value)))
      fail("cannot set up zstd to compress the executable's schedule (parameter {})", int(parameter));
  // Two workers on two cores; zstd's output is the same for any count >= 1.
  // (A libzstd built without threads refuses it and compresses on this one,
  // into other bytes: a popef's bytes are those of one build's libraries.)
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_nbWorkers, 2);
  const size_t bound = ZSTD_compressBound(segmentStart);
  std::unique_ptr<uint8_t[]> frameBuffer(new uint8_t[bound]); // not zeroed: only what zstd writes is touched
  const size_t frame = ZSTD_compress2(cctx.get(), frameBuffer.get(), bound, sealed.data(), segmentStart);
  if (ZSTD_isError(frame))
    fail("cannot compress the executable's schedule: {}", ZSTD_getErrorName(frame));

  const uint64_t segmentOffset = align64(kHeaderBytes + frame);
  std::vector<uint8_t> out;
  if (segmentOffset <= segmentStart) { // the usual case: the segment moves down
    std::memmove(sealed.data() + segmentOffset, sealed.data() + segmentStart, segmentBytes);
    out = std::move(sealed);
    out.resize(segmentOffset + segmentBytes);
  } else {
    out.reserve(segmentOffset + segmentBytes + kTrailerBytes);
    out.resize(segmentOffset);
    out.insert(out.end(), sealed.begin() + segmentStart, sealed.begin() + contentBytes);
    sealed = {};
  }
  std::memset(out.data(), 0, segmentOffset);
  std::memcpy(out.data() + kHeaderBytes, frameBuffer.get(), frame);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  put64(out, 8, segmentStart);
  put64(out, 16, frame);
  put64(out, 24, segmentStart);
  put64(out, 32, segmentOffset);
  put64(out, 40, segmentBytes);
  put64(out, 48, scheduleXxh64);
  put64(out, 56, kFilterColumns);
  seal(out);
  // The schedule's old pages past the moved segment are never read again, and
  // the vector keeps its capacity: the kernel may have them now (ViT-B/16:
  // 0.6 GB that stayed resident until the file was written).
  releaseWholePages(out.data() + out.size(), out.data() + out.capacity());
  return out;
}

CompressedLayout readCompressedLayout(std::span<const uint8_t> content, const std::string &label) {
  auto bad = [&label](const char *what) {
    fail("{}: corrupt compressed popef file ({}): recompile the model", label, what);
  };
  if (content.size() < kHeaderBytes || !isCompressed(content))
    bad("no header");
  CompressedLayout l;
  l.scheduleBytes = get64(content, 8);
  l.frameOffset = kHeaderBytes;
  l.frameBytes = get64(content, 16);
  l.segment.start = get64(content, 24);
  const uint64_t segmentOffset = get64(content, 32), segmentBytes = get64(content, 40);
  l.scheduleXxh64 = get64(content, 48);
  l.filter = get64(content, 56);
  if (l.filter != kFilterNone && l.filter != kFilterColumns)
    bad("unknown filter");
  if (l.scheduleBytes == 0 || l.scheduleBytes > kMaxScheduleBytes)
    bad("schedule size out of range");
  if (l.frameBytes > content.size() - kHeaderBytes || segmentOffset % 64 != 0 ||
      segmentOffset < align64(kHeaderBytes + l.frameBytes) || segmentOffset > content.size() ||
      segmentBytes != content.size() - segmentOffset)
    bad("frame and data segment do not fill the file");
  if (l.segment.start < l.scheduleBytes || l.segment.start % 64 != 0)
    bad("data segment starts inside the schedule");
  l.segment.bytes = content.subspan(segmentOffset, segmentBytes);
  return l;
}

void decompressSchedule(const CompressedLayout &layout, std::span<const uint8_t> content, uint8_t *out,
                        const std::string &label) {
  const uint8_t *frame = content.data() + layout.frameOffset;
  const unsigned long long declared = ZSTD_getFrameContentSize(frame, layout.frameBytes);
  if (declared != layout.scheduleBytes)
    fail("{}: corrupt compressed popef file (the schedule's frame does not declare its {} bytes): recompile the "
         "model",
         label, layout.scheduleBytes);
  const size_t got = ZSTD_decompress(out, layout.scheduleBytes, frame, layout.frameBytes);
  if (ZSTD_isError(got) || got != layout.scheduleBytes)
    fail("{}: corrupt compressed popef file (schedule: {}): recompile the model", label,
         ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short frame");
}

void unfilterSchedule(const CompressedLayout &layout, uint8_t *schedule, unsigned threads, const std::string &label) {
  if (layout.filter == kFilterColumns) {
    const std::vector<Columns> vectors = columnVectors(*::popef::fb::GetExecutable(schedule), schedule);
    // The writer's vectors never overlap; a hostile file's shared or
    // overlapping ones would be rewritten twice, on two threads at once.
    std::vector<std::pair<uint64_t, uint64_t>> ranges; // [at, end)
    for (const Columns &c : vectors)
      ranges.emplace_back(c.at, c.at + uint64_t(c.records) * c.words * 4);
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
      if (ranges[i].first < ranges[i - 1].second)
        fail("{}: corrupt compressed popef file (its filtered vectors overlap): recompile the model", label);
    transformAll(schedule, vectors, false, threads);
  }
  if (checksum({schedule, size_t(layout.scheduleBytes)}) != layout.scheduleXxh64)
    fail("{}: corrupt compressed popef file (the schedule's checksum does not match): recompile the model", label);
}

} // namespace popc::popef
