// Compressed popefs: the schedule as a zstd frame, the data segment as it is.
#include "formats/popef/popef.h"
#include "test/unit/popef/sample_executable.h"
#include "support/error.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <filesystem>
#include <map>
#include <unistd.h>

using popc::Error;
using popc::popef::Executable;
using popc::popef::len;
namespace fb = ::popef::fb;
namespace pf = popc::popef;

namespace {

// The sample with its constants in the data segment and a schedule big
// enough to compress (a long tensor name).
std::vector<uint8_t> plainSample(std::vector<std::vector<uint8_t>> &kept) {
  return popc::test::segmentSampleBytes(kept, 0, 100000);
}

std::vector<std::vector<uint8_t>> constantsOf(const Executable &exe) {
  std::vector<std::vector<uint8_t>> got;
  for (uint32_t i = 0; i < len(exe.root().constants()); ++i)
    got.emplace_back(exe.constant(i).begin(), exe.constant(i).end());
  return got;
}

// In memory; counts what the reader asks of it.
class MemoryScheduleCache : public pf::ScheduleCache {
public:
  std::optional<Mapped> find(const Key &key) override {
    ++finds;
    auto it = entries.find({key.scheduleXxh64, key.fileXxh64});
    if (it == entries.end())
      return std::nullopt;
    auto owner = std::make_shared<std::vector<uint8_t>>(it->second);
    return Mapped{owner, *owner, false};
  }
  void store(const Key &key, std::span<const uint8_t> bytes) override {
    ++stores;
    CHECK(key.scheduleBytes == bytes.size());
    entries[{key.scheduleXxh64, key.fileXxh64}].assign(bytes.begin(), bytes.end());
  }
  std::map<std::pair<uint64_t, uint64_t>, std::vector<uint8_t>> entries;
  int finds = 0, stores = 0;
};

void expectRefused(std::vector<uint8_t> bytes, const std::string &expected) {
  pf::seal(bytes);
  try {
    Executable::fromBytes(bytes, "z.popef");
    FAIL("accepted, expected: " << expected);
  } catch (const Error &e) {
    INFO(e.what());
    CHECK(std::string(e.what()).rfind("z.popef: ", 0) == 0);
    CHECK(std::string(e.what()).find(expected) != std::string::npos);
  }
}

void put64(std::vector<uint8_t> &b, size_t at, uint64_t v) { std::memcpy(b.data() + at, &v, 8); }

} // namespace

TEST_CASE("popef compressed: the same executable, smaller, deterministic", "[popef]") {
  std::vector<std::vector<uint8_t>> kept;
  const auto plain = plainSample(kept);
  const auto packed = pf::compress(plain, pf::kDefaultCompressionLevel);
  CHECK(packed == pf::compress(plain, pf::kDefaultCompressionLevel));
  CHECK(pf::isCompressed(packed));
  CHECK_FALSE(pf::isCompressed(plain));
  CHECK(packed.size() < plain.size() / 4);

  auto a = Executable::fromBytes(plain, "plain.popef");
  auto b = Executable::fromBytes(packed, "z.popef");
  CHECK(b->compressed());
  CHECK_FALSE(a->compressed());
  // The flatbuffer is byte for byte the one the plain file holds (less the
  // padding before its data segment), and the constants read back.
  REQUIRE(b->schedule().size() <= a->schedule().size());
  CHECK(std::memcmp(a->schedule().data(), b->schedule().data(), b->schedule().size()) == 0);
  CHECK(constantsOf(*b) == kept);
  CHECK(constantsOf(*a) == kept);

  // A mapped compressed file reads the same, and its released pages read back.
  const std::string path =
      (std::filesystem::temp_directory_path() / ("z.popef." + std::to_string(::getpid()))).string();
  pf::writeFile(path, packed);
  auto c = Executable::open(path, 2);
  CHECK(constantsOf(*c) == kept);
  c->releaseMappedPages();
  c->releaseMappedPages(c->schedule()); // anonymous: left as it is
  CHECK(constantsOf(*c) == kept);
  CHECK(std::memcmp(a->schedule().data(), c->schedule().data(), c->schedule().size()) == 0);
  CHECK(c->anonymousScheduleBytes() == c->schedule().size());
  CHECK(a->anonymousScheduleBytes() == 0);
  // A memory budget (--max-memory) refuses what would not fit once decompressed, before it is.
  CHECK_THROWS_WITH(Executable::open(path, 1, 1000), Catch::Contains("once decompressed, more than --max-memory"));
  CHECK(Executable::open(path, 1, 64u << 20));
  std::filesystem::remove(path);
}

TEST_CASE("popef compressed: a corrupt header, frame or segment is refused with the file's name", "[popef]") {
  std::vector<std::vector<uint8_t>> kept;
  auto packed = pf::compress(plainSample(kept), 3);
  packed.resize(packed.size() - pf::kTrailerBytes); // each case re-seals its edit
  uint64_t frame = 0, segmentOffset = 0;
  std::memcpy(&frame, packed.data() + 16, 8);
  std::memcpy(&segmentOffset, packed.data() + 32, 8);

  auto edit = [&](auto change) {
    auto b = packed;
    change(b);
    return b;
  };
  expectRefused(edit([](auto &b) { put64(b, 8, 0); }), "schedule size out of range");
  expectRefused(edit([](auto &b) { put64(b, 8, uint64_t(1) << 40); }), "schedule size out of range");
  expectRefused(edit([](auto &b) { put64(b, 8, 1000); }), "does not declare");
  expectRefused(edit([](auto &b) { put64(b, 16, uint64_t(1) << 40); }), "do not fill the file");
  expectRefused(edit([&](auto &b) { put64(b, 32, segmentOffset + 64); }), "do not fill the file");
  expectRefused(edit([](auto &b) { put64(b, 24, 64); }), "starts inside the schedule");
  expectRefused(edit([&](auto &b) { b[64 + frame / 2] ^= 0x5a; }), "corrupt");
  // The columns filter (1) undone where it was not applied, or not undone.
  CHECK(packed[56] == 1);
  expectRefused(edit([](auto &b) { put64(b, 56, 7); }), "unknown filter");
  expectRefused(edit([](auto &b) { put64(b, 56, 0); }), "checksum does not match");
  // A constant's bytes: its checksum.
  expectRefused(edit([&](auto &b) { b[segmentOffset + 1] ^= 1; }), "checksum");
  expectRefused(edit([](auto &b) { b.resize(40); }), "no header");
}

TEST_CASE("popef compressed: a schedule cache is filled once and then read, a bad entry is not", "[popef]") {
  std::vector<std::vector<uint8_t>> kept;
  const auto packed = pf::compress(plainSample(kept), 3);
  auto cache = std::make_shared<MemoryScheduleCache>();
  pf::setScheduleCache(cache);
  struct Reset {
    ~Reset() { pf::setScheduleCache(nullptr); }
  } reset;

  Executable::fromBytes(packed, "z.popef").reset(); // the store runs beside; done by the destructor
  CHECK(cache->finds == 1);
  CHECK(cache->stores == 1);
  REQUIRE(cache->entries.size() == 1);

  auto hit = Executable::fromBytes(packed, "z.popef");
  CHECK(cache->stores == 1); // found, not decompressed again
  CHECK(constantsOf(*hit) == kept);
  hit.reset();

  // An entry that is not the schedule (same key) is ignored and replaced.
  auto &entry = cache->entries.begin()->second;
  entry[entry.size() / 2] ^= 1;
  auto again = Executable::fromBytes(packed, "z.popef");
  CHECK(constantsOf(*again) == kept);
  again.reset();
  CHECK(cache->stores == 2);
}
