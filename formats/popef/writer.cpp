// Writing popef executables: object API pack + atomic file replacement.
#include "formats/popef/popef.h"
#include "support/file_io.h"

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

std::vector<uint8_t> serialize(const ::popef::fb::ExecutableT &exe, size_t sizeHint) {
  // The builder's output depends only on the object tree (no hashing of
  // pointers, no timestamps), so the same executable gives the same bytes.
  // Sized up front: growing a builder of hundreds of MB doubles and copies it
  // (and faults in fresh pages) each time.
  flatbuffers::FlatBufferBuilder fbb(std::max<size_t>(1 << 16, sizeHint));
  fbb.ForceDefaults(true); // every checksum field is stored, so it can be patched below
  auto root = ::popef::fb::Executable::Pack(fbb, &exe);
  ::popef::fb::FinishExecutableBuffer(fbb, root);
  std::vector<uint8_t> bytes;
  bytes.reserve(fbb.GetSize() + kTrailerBytes); // seal() appends without reallocating
  bytes.assign(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  auto *packed = ::popef::fb::GetMutableExecutable(bytes.data());
  if (auto *constants = packed->mutable_constants())
    for (flatbuffers::uoffset_t i = 0; i < constants->size(); ++i) {
      auto *c = constants->GetMutableObject(i);
      c->mutate_xxh64(c->data() ? checksum({c->data()->data(), c->data()->size()}) : checksum({}));
    }
  if (auto *code = packed->mutable_code())
    for (flatbuffers::uoffset_t i = 0; i < code->size(); ++i) {
      auto *m = code->GetMutableObject(i);
      m->mutate_xxh64(m->bitcode() ? checksum({m->bitcode()->data(), m->bitcode()->size()}) : checksum({}));
    }
  seal(bytes);
  return bytes;
}

void writeFile(const std::string &path, std::span<const uint8_t> bytes) { writeFileAtomically(path, bytes); }

} // namespace popc::popef
