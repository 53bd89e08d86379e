// Reading and writing popef executables. Every reader path verifies before
// use: the flatbuffers Verifier, then semantic checks (indices in range, every
// byte range inside its tile's memory, program tree well-formed).
#pragma once
#include "formats/popef/popef_generated.h"
#include "support/dtype.h"

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace popc::popef {

// 2: load program, filled_at_load; 3: checks; 4: data segment; 5: exchange
// steps as pieces and placements (shared gathers) instead of copy records;
// 6: immediate fields (FieldAccess::Immediate: a number in the field table).
// A version 5 file is a version 6 file without immediates, so both are read;
// a version 5 reader refuses a version 6 file by its version, with the fix.
constexpr uint32_t kFormatVersion = 6;
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

// A field that is a number in the vertex's field table, not memory (popef.fbs).
inline bool isImmediate(const ::popef::fb::FieldDecl &f) { return f.access() == ::popef::fb::FieldAccess::Immediate; }

// The bytes tile t (of one replica) may use: its tile_bytes_used entry, or
// bytes_per_tile when the file has none. The verifier keeps every tensor
// interval, vertex field and copy of tile t within them, so the runner lays
// tiles out in just this much host memory (runtime/device_memory.h).
inline uint32_t tileMemoryBytes(const ::popef::fb::Executable &exe, uint32_t t) {
  const auto *used = exe.tile_bytes_used();
  return used && used->size() ? used->Get(t) : exe.target()->bytes_per_tile();
}
// tileMemoryBytes of every tile of `replicas` replicas, replica after
// replica (replica r's tile t at r * tiles per replica + t): what the
// runner's arena holds, and what its memory estimate counts.
inline std::vector<uint32_t> replicaTileMemoryBytes(const ::popef::fb::Executable &exe, uint32_t replicas) {
  const uint32_t tiles = exe.target()->num_ipus() * exe.target()->tiles_per_ipu();
  std::vector<uint32_t> bytes(size_t(tiles) * replicas);
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = tileMemoryBytes(exe, uint32_t(i % tiles));
  return bytes;
}

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

// Where the data segment's bytes are. A constant's `offset` counts from the
// start of the uncompressed file: byte `offset` is bytes[offset - start]. An
// uncompressed file is its own segment (start 0, bytes: the whole content); a
// compressed one (compressed.cpp) keeps its segment apart from the schedule.
struct Segment {
  uint64_t start = 0;
  std::span<const uint8_t> bytes;
  bool contains(uint64_t offset, uint64_t size) const {
    return offset >= start && offset - start <= bytes.size() && size <= bytes.size() - (offset - start);
  }
};

// The bytes of a constant: its inline data, or its range of the data segment.
// Unchecked: for verified files, or after the verifier's range check.
std::span<const uint8_t> constantBytes(const ::popef::fb::ConstantData &c, const Segment &segment);

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
// `copied(i)`, if given, is called once segment entry i is in the file's
// bytes and will not be read again (a caller may drop its pages).
std::vector<uint8_t> serialize(::popef::fb::ExecutableT &&exe, size_t sizeHint = 0,
                               std::span<const std::span<const uint8_t>> segment = {},
                               const std::function<void(size_t)> &copied = {});
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

// Compressed popefs (compressed.cpp, docs/popef-format.md): the schedule (the
// flatbuffer) as one zstd frame, the data segment stored as it is (so the
// weights are still mapped straight from the file), then the trailer.
// `sealed`: serialize()'s bytes, reused for the result. `level`: zstd's,
// 1..19. Deterministic.
std::vector<uint8_t> compress(std::vector<uint8_t> sealed, int level);
constexpr int kDefaultCompressionLevel = 9;
// True when `bytes` start like a compressed popef.
bool isCompressed(std::span<const uint8_t> bytes);
// The zstd library's version: compressed bytes depend on it (a compile cache key).
std::string compressorVersion();

// Keeps compressed popefs' schedules decompressed between runs, so that a warm
// start maps its schedule from a file, as it maps an uncompressed popef (no
// decompression, and pages it can release). Entries are found by the
// schedule's XXH64 (in the file's header), its size and the file's XXH64, and
// checked against the first two.
// poprun-lite and the API plug in the cache directory (kind "sched").
class ScheduleCache {
public:
  struct Mapped {
    std::shared_ptr<const void> owner; // keeps `bytes` valid
    std::span<const uint8_t> bytes;
    bool fileBacked = false; // a file's pages: releasing them does not lose them
  };
  virtual ~ScheduleCache() = default;
  // What names a schedule: its own XXH64 and size, and the XXH64 of the file
  // that holds it (its trailer), so that a hit needs two hashes to agree.
  struct Key {
    uint64_t scheduleXxh64 = 0, scheduleBytes = 0, fileXxh64 = 0;
  };
  virtual std::optional<Mapped> find(const Key &key) = 0;
  virtual void store(const Key &key, std::span<const uint8_t> bytes) = 0;
};
// Process-wide (null: none), used by Executable::open for compressed files.
void setScheduleCache(std::shared_ptr<ScheduleCache> cache);

// A verified executable, backed by an mmap of the file or by owned bytes.
class Executable {
public:
  // Throws popc::Error("<path>: <what is wrong>") for unreadable, truncated,
  // corrupt or semantically invalid files.
  // `threads`: host threads the semantic checks may use (the exchange steps').
  // `memoryBudget` (0: none): a compressed file whose schedule would need more
  // once decompressed is refused before it is (poprun-lite --max-memory).
  static std::shared_ptr<const Executable> open(const std::string &path, unsigned threads = 1,
                                                uint64_t memoryBudget = 0);
  static std::shared_ptr<const Executable> fromBytes(std::vector<uint8_t> bytes,
                                                     const std::string &label = "<memory>");
  ~Executable();

  const ::popef::fb::Executable &root() const { return *root_; }
  // The bytes of constants[i] (verified: inline, or inside the data segment).
  std::span<const uint8_t> constant(uint32_t i) const;
  // The file as stored (compressed or not).
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // The flatbuffer (decompressed if the file is compressed).
  std::span<const uint8_t> schedule() const { return schedule_; }
  bool compressed() const { return isCompressed(bytes()); }
  // Bytes of a compressed file's schedule held in anonymous memory (decompressed
  // here, not mapped from the ScheduleCache): resident for the Executable's life.
  uint64_t anonymousScheduleBytes() const { return decompressed_ ? decompressedSize_ : 0; }
  const std::string &label() const { return label_; }
  // Lets the kernel drop the mapped file's pages from this process (they stay
  // valid: a later read maps them again from the page cache). A runner calls
  // it once it has copied what it needs, so the file does not add to its
  // resident memory next to the tiles'. No effect on owned bytes.
  void releaseMappedPages() const;
  // The same for the whole pages inside `bytes` (a span of bytes()). A
  // compressed file's schedule lives in anonymous memory, whose dropped pages
  // would read back as zeros: spans of it are left resident.
  void releaseMappedPages(std::span<const uint8_t> bytes) const;

private:
  Executable() = default;
  // `memoryBudget`: as open's (0: none).
  void verify(unsigned threads, uint64_t memoryBudget = 0);
  void verifyFlatbuffer() const;
  // A compressed file's schedule: from the ScheduleCache, or decompressed,
  // verified and its filter undone.
  void decompress(std::span<const uint8_t> content, unsigned threads, uint64_t memoryBudget);
  std::string label_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  size_t contentSize_ = 0;      // size_ less the trailer
  void *mapping_ = nullptr;     // munmap on destruction if set
  std::span<const uint8_t> schedule_; // the flatbuffer
  Segment segment_;
  ScheduleCache::Mapped cached_; // a compressed file's schedule from the ScheduleCache
  void *decompressed_ = nullptr; // a compressed file's schedule (anonymous mapping), munmap on destruction
  size_t decompressedSize_ = 0;
  ScheduleCache::Key scheduleKey_;
  std::future<void> storing_; // the decompressed schedule going into the ScheduleCache
  std::vector<uint8_t> owned_;  // when built from bytes
  const ::popef::fb::Executable *root_ = nullptr;
};

} // namespace popc::popef

#include "formats/popef/folded.h" // format 5: the schedule stored by its shape
