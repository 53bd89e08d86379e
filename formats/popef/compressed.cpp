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
//  56  8 bytes of zeros
//  64  zstd frame (content size and checksum set), zero padding to 64,
//      the data segment, the trailer ("POPFXXH1", XXH64 of all before it).
#include "formats/popef/popef.h"
#include "formats/popef/compressed.h"

#include "support/error.h"

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

} // namespace

bool isCompressed(std::span<const uint8_t> bytes) {
  return bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0;
}

std::vector<uint8_t> compress(std::span<const uint8_t> sealed, int level) {
  POPC_ASSERT(sealed.size() > kTrailerBytes && !isCompressed(sealed));
  const std::span<const uint8_t> content = sealed.first(sealed.size() - kTrailerBytes);
  // The schedule ends where the data segment begins: at the first constant
  // stored there (the writer puts the segment right after the flatbuffer).
  const auto *exe = ::popef::fb::GetExecutable(content.data());
  uint64_t segmentStart = content.size();
  if (exe->constants())
    for (const ::popef::fb::ConstantData *c : *exe->constants())
      if (c->size())
        segmentStart = std::min<uint64_t>(segmentStart, c->offset());
  const std::span<const uint8_t> schedule = content.first(segmentStart), segment = content.subspan(segmentStart);

  std::unique_ptr<ZSTD_CCtx, decltype(&ZSTD_freeCCtx)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  POPC_ASSERT(cctx);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, std::clamp(level, 1, ZSTD_maxCLevel()));
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_contentSizeFlag, 1);
  // Two workers on two cores; zstd's output is the same for any count >= 1.
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_nbWorkers, 2);

  std::vector<uint8_t> out(kHeaderBytes + ZSTD_compressBound(schedule.size()));
  const size_t frame = ZSTD_compress2(cctx.get(), out.data() + kHeaderBytes, out.size() - kHeaderBytes,
                                      schedule.data(), schedule.size());
  if (ZSTD_isError(frame))
    fail("cannot compress the executable's schedule: {}", ZSTD_getErrorName(frame));
  const uint64_t segmentOffset = align64(kHeaderBytes + frame);
  out.resize(segmentOffset, 0);
  out.insert(out.end(), segment.begin(), segment.end());
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  put64(out, 8, schedule.size());
  put64(out, 16, frame);
  put64(out, 24, segmentStart);
  put64(out, 32, segmentOffset);
  put64(out, 40, segment.size());
  put64(out, 48, checksum(schedule));
  seal(out);
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

} // namespace popc::popef
