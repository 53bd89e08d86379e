// Fuzz target: a cache entry as LocalStore reads it from disk (cache/local_store.cpp:
// the <key>.meta sidecar holding the header and maybe a verification stamp, the
// bare payload file; header, size, key and XXH3-128 checks; a bad entry deleted)
// and as a remote body is checked (checkEntry, header + payload in one).
// Input: a mode byte, the 64-byte header, 32 stamp bytes if mode bit 3, then the
// payload. Mode bits 0-2 repair what mutations could not forge: the payload
// hash, the key, the payload size. Invariants: a hit returns exactly the
// payload, only sound entries are served (a bad one is deleted), getToFile
// agrees with get, and nothing but popc::Error escapes.
#include "cache/entry.h"
#include "cache/hash.h"
#include "cache/local_store.h"
#include "fuzz/fuzz_util.h"
#include "support/error.h"
#include "support/log.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;

namespace {
const fs::path &scratch() {
  static const fs::path dir = [] {
    popc::log::setLevel("off");
    fs::path d = fs::temp_directory_path() / ("popc-fuzz-cache-" + std::to_string(::getpid()));
    fs::remove_all(d);
    popc::cache::LocalStore marks(d, 1ull << 40); // an empty directory becomes a (tagged) cache
    static const fs::path *const keep = new fs::path(d); // outlives static destructors
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(*keep, ec);
    });
    return d;
  }();
  return dir;
}
void putLe(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; ++i)
    p[i] = uint8_t(v >> (8 * i));
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  const uint8_t mode = data[0];
  std::vector<uint8_t> entry(data + 1, data + size);
  std::vector<uint8_t> stamp;
  constexpr size_t kStamp = 32;
  if ((mode & 8) && entry.size() >= popc::cache::kHeaderSize + kStamp) {
    stamp.assign(entry.begin() + popc::cache::kHeaderSize, entry.begin() + popc::cache::kHeaderSize + kStamp);
    entry.erase(entry.begin() + popc::cache::kHeaderSize, entry.begin() + popc::cache::kHeaderSize + kStamp);
  }
  popc::cache::Digest key;
  for (int i = 0; i < 16; ++i)
    key.bytes[i] = uint8_t(0x11 * (i + 1));
  if (entry.size() >= popc::cache::kHeaderSize) {
    std::span<const uint8_t> payload(entry.data() + popc::cache::kHeaderSize, entry.size() - popc::cache::kHeaderSize);
    if (mode & 1) {
      popc::cache::Digest h = popc::cache::hashBytes(payload);
      std::memcpy(entry.data() + 24, h.bytes, 16);
    }
    if (mode & 2)
      std::memcpy(entry.data() + 40, key.bytes, 16);
    if (mode & 4)
      putLe(entry.data() + 16, payload.size(), 8);
  }
  const bool sound = popc::cache::checkEntry(entry, key).empty();

  const std::string hex = key.hex();
  const fs::path dir = scratch();
  const fs::path file = dir / "exe" / hex.substr(0, 2) / hex, meta = file.string() + ".meta";
  fs::create_directories(file.parent_path());
  fs::remove(file);
  fs::remove(meta);
  const size_t headerBytes = std::min(entry.size(), popc::cache::kHeaderSize);
  {
    std::ofstream m(meta, std::ios::binary);
    m.write(reinterpret_cast<const char *>(entry.data()), headerBytes);
    m.write(reinterpret_cast<const char *>(stamp.data()), stamp.size());
  }
  std::ofstream(file, std::ios::binary)
      .write(reinterpret_cast<const char *>(entry.data() + headerBytes), entry.size() - headerBytes);
  try {
    popc::cache::LocalStore store(dir, 1ull << 40);
    auto blob = store.get("exe", hex);
    if (blob.has_value() != sound)
      std::abort(); // served a bad entry, or refused a sound one
    if (blob && (blob->size() != entry.size() - popc::cache::kHeaderSize ||
                 (blob->size() && std::memcmp(blob->bytes().data(), entry.data() + popc::cache::kHeaderSize, blob->size()))))
      std::abort(); // a hit must be exactly the payload
    if (!sound && fs::exists(meta))
      std::abort(); // a bad entry is deleted, never served again
    if (sound) {
      const fs::path out = dir / "out.bin";
      auto n = store.getToFile("exe", hex, out.string());
      if (!n || *n != blob->size() || fs::file_size(out) != *n)
        std::abort();
    }
    popc::fuzz::accepted();
  } catch (const popc::Error &e) {
    popc::fuzz::rejected(e);
  }
  return 0;
}
