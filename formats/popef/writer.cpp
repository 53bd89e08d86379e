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
#include <sys/mman.h>
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

// ExecutableT::Pack, field for field and in the same order (so the same
// bytes), freeing each tensor, compute set and exchange step of the tree as
// soon as it is in the builder: the tree and the builder then never both hold
// the schedule (ViT-B/16's copy records alone are 0.9 GB). A new field in
// popef.fbs changes ExecutableT's size and stops the build here: add it below.
static_assert(sizeof(::popef::fb::ExecutableT) == 336, "popef.fbs changed Executable: update packConsuming");
flatbuffers::Offset<::popef::fb::Executable> packConsuming(flatbuffers::FlatBufferBuilder &fbb,
                                                           ::popef::fb::ExecutableT &o) {
  namespace fb = ::popef::fb;
  // Vectors of tables, each element freed once packed. The tree's freed
  // memory is handed back as the builder grows (the builder's growth stands
  // for it), so tree and builder are not both resident.
  PeriodicHeapRelease release;
  auto tables = [&fbb, &release](auto &list, auto create) {
    using Offset = decltype(create(fbb, list[0].get()));
    if (list.empty())
      return flatbuffers::Offset<flatbuffers::Vector<Offset>>(0);
    std::vector<Offset> offsets(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      const size_t before = fbb.GetSize();
      offsets[i] = create(fbb, list[i].get());
      list[i].reset();
      release.freed(fbb.GetSize() - before);
    }
    return fbb.CreateVector(offsets);
  };
  const uint32_t formatVersion = o.format_version;
  auto compilerVersion = o.compiler_version.empty() ? 0 : fbb.CreateString(o.compiler_version);
  auto target = o.target ? fb::CreateTarget(fbb, o.target.get()) : 0;
  auto metadata = o.metadata ? fb::CreateMetadata(fbb, o.metadata.get()) : 0;
  auto tensors = tables(o.tensors, [](auto &b, auto *t) { return fb::CreateTensor(b, t); });
  auto constants = tables(o.constants, [](auto &b, auto *t) { return fb::CreateConstantData(b, t); });
  auto code = tables(o.code, [](auto &b, auto *t) { return fb::CreateCodeModule(b, t); });
  auto vertexTypes = tables(o.vertex_types, [](auto &b, auto *t) { return fb::CreateVertexType(b, t); });
  auto computeSets = tables(o.compute_sets, [](auto &b, auto *t) { return fb::CreateComputeSet(b, t); });
  auto exchanges = tables(o.exchanges, [](auto &b, auto *t) { return fb::CreateExchangeStep(b, t); });
  auto streams = tables(o.streams, [](auto &b, auto *t) { return fb::CreateHostStream(b, t); });
  auto functions = tables(o.functions, [](auto &b, auto *t) { return fb::CreateProgram(b, t); });
  auto main = o.main ? fb::CreateProgram(fbb, o.main.get()) : 0;
  auto tileBytesUsed = o.tile_bytes_used.empty() ? 0 : fbb.CreateVector(o.tile_bytes_used);
  auto load = o.load ? fb::CreateProgram(fbb, o.load.get()) : 0;
  auto checks = tables(o.checks, [](auto &b, auto *t) { return fb::CreateCheck(b, t); });
  auto sourceModel = o.source_model.empty() ? 0 : fbb.CreateVector(o.source_model);
  return fb::CreateExecutable(fbb, formatVersion, compilerVersion, target, metadata, tensors, constants, code,
                              vertexTypes, computeSets, exchanges, streams, functions, main, tileBytesUsed, load,
                              checks, sourceModel);
}

// The builder's buffer as its own anonymous mapping, so that the pages
// already copied into the file's bytes can be handed back while the rest is
// copied (releaseWholePages): the schedule is then resident about once, not twice
// (ViT-B/16's is 1.2 GB).
class MappedAllocator : public flatbuffers::Allocator {
public:
  uint8_t *allocate(size_t size) override {
    void *p = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      fail("cannot allocate {} bytes for the executable's schedule: {}", size, std::strerror(errno));
    return static_cast<uint8_t *>(p);
  }
  void deallocate(uint8_t *p, size_t size) override { ::munmap(p, size); }
};

// `consumed`: the same tree as `exe`, packed by packConsuming and then freed (or null).
std::vector<uint8_t> packAndSeal(const ::popef::fb::ExecutableT &exe, size_t sizeHint,
                                 std::span<const std::span<const uint8_t>> segment,
                                 ::popef::fb::ExecutableT *consumed, const std::function<void(size_t)> &copied) {
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
  MappedAllocator mapped;
  flatbuffers::FlatBufferBuilder fbb(std::max<size_t>(1 << 16, sizeHint), &mapped, false);
  fbb.ForceDefaults(true); // every checksum and segment field is stored, so it can be patched below
  auto root = consumed ? packConsuming(fbb, *consumed) : ::popef::fb::Executable::Pack(fbb, &exe);
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
  constexpr size_t kCopyChunk = size_t(16) << 20;
  for (const uint8_t *from = fbb.GetBufferPointer(), *end = from + fbb.GetSize(); from < end;) {
    const uint8_t *to = std::min(end, from + kCopyChunk);
    bytes.insert(bytes.end(), from, to);
    releaseWholePages(from, to); // copied: not read again
    from = to;
  }
  fbb.Reset(); // its buffer, before the data segment grows the file
  std::vector<uint64_t> offsets(segment.size(), 0);
  for (size_t i = 0; i < segment.size(); ++i) {
    if (segment[i].empty())
      continue;
    bytes.resize(align64(bytes.size()), 0);
    offsets[i] = bytes.size();
    bytes.insert(bytes.end(), segment[i].begin(), segment[i].end());
    if (copied)
      copied(i);
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
        c->mutate_xxh64(checksum({bytes.data() + offsets[i], segment[i].size()})); // the copy: the caller's may be gone
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
  return packAndSeal(exe, sizeHint, segment, nullptr, {});
}

std::vector<uint8_t> serialize(::popef::fb::ExecutableT &&exe, size_t sizeHint,
                               std::span<const std::span<const uint8_t>> segment,
                               const std::function<void(size_t)> &copied) {
  return packAndSeal(exe, sizeHint, segment, &exe, copied);
}

void writeFile(const std::string &path, std::span<const uint8_t> bytes) { writeFileAtomically(path, bytes); }

} // namespace popc::popef
