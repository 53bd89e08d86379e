// The compressed popef container (compressed.cpp): header, zstd frame of the
// schedule, data segment, trailer. For reader.cpp; users call compress() and
// Executable::open (popef.h).
#pragma once
#include "formats/popef/popef.h"

#include <cstdint>
#include <span>
#include <string>

namespace popc::popef {

// What a compressed file's 64-byte header says, checked against its size.
struct CompressedLayout {
  uint64_t scheduleBytes = 0; // the flatbuffer, decompressed
  uint64_t frameOffset = 0;   // the zstd frame: file bytes [frameOffset, frameOffset + frameBytes)
  uint64_t frameBytes = 0;
  Segment segment;            // start: where the uncompressed file had it; bytes: in this file
  uint64_t scheduleXxh64 = 0; // of the decompressed schedule (a ScheduleCache entry's check)
  uint64_t filter = 0;        // 1: the columns filter (compressed.cpp)
};

// `content`: the file less its trailer. Throws popc::Error naming `label`.
CompressedLayout readCompressedLayout(std::span<const uint8_t> content, const std::string &label);
// Decompresses the schedule into `out` (layout.scheduleBytes long).
void decompressSchedule(const CompressedLayout &layout, std::span<const uint8_t> content, uint8_t *out,
                        const std::string &label);

// Undoes the filter, in place, once the flatbuffers Verifier has passed the
// decompressed schedule (it finds the filtered vectors through the tables),
// and checks the result against the header's XXH64.
void unfilterSchedule(const CompressedLayout &layout, uint8_t *schedule, unsigned threads, const std::string &label);

} // namespace popc::popef
