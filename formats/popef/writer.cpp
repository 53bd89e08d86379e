// Writing popef executables: object API pack + atomic file replacement.
#include "formats/popef/popef.h"
#include "support/file_io.h"

#include "support/allocator.h"
#include "support/error.h"

#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <sys/stat.h>
#include <unistd.h>

namespace popc::popef {

uint64_t checksum(std::span<const uint8_t> bytes) { return XXH64(bytes.data(), bytes.size(), 0); }

namespace {
constexpr char kTrailerMagic[8] = {'P', 'O', 'P', 'F', 'X', 'X', 'H', '1'};
} // namespace

void seal(std::vector<uint8_t> &bytes) {
  if (bytes.size() >= kTrailerBytes && std::memcmp(bytes.data() + bytes.size() - kTrailerBytes, kTrailerMagic, 8) == 0)
    bytes.resize(bytes.size() - kTrailerBytes);
  const uint64_t sum = checksum(bytes);
  bytes.insert(bytes.end(), kTrailerMagic, kTrailerMagic + 8);
  const auto *p = reinterpret_cast<const uint8_t *>(&sum); // little-endian host (x86-64)
  bytes.insert(bytes.end(), p, p + 8);
}

bool hasValidTrailer(const uint8_t *data, size_t size) {
  if (size < kTrailerBytes || std::memcmp(data + size - kTrailerBytes, kTrailerMagic, 8) != 0)
    return false;
  uint64_t stored = 0;
  std::memcpy(&stored, data + size - 8, 8);
  return checksum({data, size - kTrailerBytes}) == stored;
}

namespace {
// `consumed`: the same tree as `exe`, to free once packed (or null).
std::vector<uint8_t> packAndSeal(const ::popef::fb::ExecutableT &exe, size_t sizeHint,
                                 std::span<const std::span<const uint8_t>> segment,
                                 ::popef::fb::ExecutableT *consumed) {
  auto tooLarge = [](uint64_t bytes) {
    fail("the executable's schedule (tensors, vertices, copy records) needs {:.2f} GiB, over popef's 2 GiB "
         "limit for it (weights do not count: they go in the data segment)",
         bytes / double(1ull << 30));
  };
  if (sizeHint > kMaxScheduleBytes)
    tooLarge(sizeHint);
  // The builder's output depends only on the object tree (no hashing of
  // pointers, no timestamps), so the same executable gives the same bytes.
  // Sized up front: growing a builder of hundreds of MB doubles and copies it
  // (and faults in fresh pages) each time.
  flatbuffers::FlatBufferBuilder fbb(std::max<size_t>(1 << 16, sizeHint));
  fbb.ForceDefaults(true); // every checksum and segment field is stored, so it can be patched below
  auto root = ::popef::fb::Executable::Pack(fbb, &exe);
  ::popef::fb::FinishExecutableBuffer(fbb, root);
  if (fbb.GetSize() > kMaxScheduleBytes)
    tooLarge(fbb.GetSize());
  if (consumed) {
    *consumed = ::popef::fb::ExecutableT();
    releaseFreedHeap(); // its hundreds of MB would otherwise stay resident beside the file's bytes
  }
  auto align64 = [](uint64_t n) { return (n + 63) / 64 * 64; };
  uint64_t total = align64(fbb.GetSize());
  for (std::span<const uint8_t> s : segment)
    total += align64(s.size());
  std::vector<uint8_t> bytes;
  bytes.reserve(total + kTrailerBytes); // seal() appends without reallocating
  bytes.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  fbb.Reset(); // its buffer, before the data segment grows the file
  std::vector<uint64_t> offsets(segment.size(), 0);
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i].empty())
      continue;
    bytes.resize(align64(bytes.size()), 0);
    offsets[i] = bytes.size();
    bytes.insert(bytes.end(), segment[i].begin(), segment[i].end());
  }
  bytes.resize(align64(bytes.size()), 0);
  auto *packed = ::popef::fb::GetMutableExecutable(bytes.data());
  if (auto *constants = packed->mutable_constants())
    for (flatbuffers::uoffset_t i = 0; i < constants->size(); ++i) {
      auto *c = constants->GetMutableObject(i);
      if (i < segment.size() && !segment[i].empty()) {
        POPC_ASSERT(!c->data() || c->data()->size() == 0);
        c->mutate_offset(offsets[i]);
        c->mutate_size(segment[i].size());
        c->mutate_xxh64(checksum(segment[i]));
      } else {
        c->mutate_xxh64(c->data() ? checksum({c->data()->data(), c->data()->size()}) : checksum({}));
      }
    }
  if (auto *code = packed->mutable_code())
    for (flatbuffers::uoffset_t i = 0; i < code->size(); ++i) {
      auto *m = code->GetMutableObject(i);
      m->mutate_xxh64(m->bitcode() ? checksum({m->bitcode()->data(), m->bitcode()->size()}) : checksum({}));
    }
  seal(bytes);
  return bytes;
}
} // namespace

std::vector<uint8_t> serialize(const ::popef::fb::ExecutableT &exe, size_t sizeHint,
                               std::span<const std::span<const uint8_t>> segment) {
  return packAndSeal(exe, sizeHint, segment, nullptr);
}

std::vector<uint8_t> serialize(::popef::fb::ExecutableT &&exe, size_t sizeHint,
                               std::span<const std::span<const uint8_t>> segment) {
  return packAndSeal(exe, sizeHint, segment, &exe);
}

void writeFile(const std::string &path, std::span<const uint8_t> bytes) { writeFileAtomically(path, bytes); }

} // namespace popc::popef
