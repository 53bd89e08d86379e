#include "cache/entry.h"

#include <fmt/format.h>

#include <cstring>

namespace popc::cache {

namespace {
constexpr char kMagic[8] = {'P', 'O', 'P', 'C', 'C', 'A', 'S', '\0'};

void putLe(uint8_t *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t getLe(const uint8_t *p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= uint64_t(p[i]) << (8 * i);
  return v;
}
} // namespace

std::array<uint8_t, kHeaderSize> encodeHeader(const Digest &key, std::span<const uint8_t> payload) {
  std::array<uint8_t, kHeaderSize> h{};
  std::memcpy(h.data(), kMagic, 8);
  putLe(h.data() + 8, kFormatVersion, 4);
  putLe(h.data() + 12, kHeaderSize, 4);
  putLe(h.data() + 16, payload.size(), 8);
  Digest d = hashBytes(payload);
  std::memcpy(h.data() + 24, d.bytes, 16);
  std::memcpy(h.data() + 40, key.bytes, 16);
  return h;
}

std::string checkHeader(std::span<const uint8_t> header, uint64_t entrySize, const Digest &key,
                        const Digest &payloadHash) {
  if (header.size() < kHeaderSize || entrySize < kHeaderSize)
    return fmt::format("truncated: {} bytes, shorter than the {}-byte header", entrySize, kHeaderSize);
  const uint8_t *h = header.data();
  if (std::memcmp(h, kMagic, 8) != 0)
    return "not a popc cache entry (bad magic)";
  if (uint64_t v = getLe(h + 8, 4); v != kFormatVersion)
    return fmt::format("entry format version {} (this popc reads {})", v, kFormatVersion);
  if (getLe(h + 12, 4) != kHeaderSize)
    return "bad header size";
  uint64_t size = getLe(h + 16, 8);
  if (size != entrySize - kHeaderSize)
    return fmt::format("truncated: header says {} payload bytes, found {}", size, entrySize - kHeaderSize);
  if (std::memcmp(h + 40, key.bytes, 16) != 0)
    return "foreign entry: it belongs to another key";
  if (std::memcmp(h + 24, payloadHash.bytes, 16) != 0)
    return "payload hash mismatch (corrupt)";
  return {};
}

Digest recordedPayloadHash(std::span<const uint8_t> header) {
  Digest d;
  if (header.size() >= kHeaderSize)
    std::memcpy(d.bytes, header.data() + 24, 16);
  return d;
}

std::string checkEntry(std::span<const uint8_t> entry, const Digest &key) {
  if (entry.size() < kHeaderSize)
    return checkHeader(entry, entry.size(), key, Digest{});
  return checkHeader(entry.first(kHeaderSize), entry.size(), key, hashBytes(entry.subspan(kHeaderSize)));
}

} // namespace popc::cache
