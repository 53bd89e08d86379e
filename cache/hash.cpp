#include "cache/hash.h"

#include "support/error.h"

#include <xxhash.h>

#include <cstring>

namespace popc::cache {

namespace {
Digest fromHash(XXH128_hash_t h) {
  Digest d;
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  std::memcpy(d.bytes, c.digest, 16);
  return d;
}
} // namespace

std::string Digest::hex() const {
  static const char digits[] = "0123456789abcdef";
  std::string s(32, '0');
  for (int i = 0; i < 16; ++i) {
    s[2 * i] = digits[bytes[i] >> 4];
    s[2 * i + 1] = digits[bytes[i] & 15];
  }
  return s;
}

Digest hashBytes(std::span<const uint8_t> bytes) { return fromHash(XXH3_128bits(bytes.data(), bytes.size())); }

bool isKey(std::string_view key) {
  if (key.size() != 32)
    return false;
  for (char c : key)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

bool parseKey(std::string_view key, Digest &out) {
  if (!isKey(key))
    return false;
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (int i = 0; i < 16; ++i)
    out.bytes[i] = static_cast<uint8_t>(nibble(key[2 * i]) << 4 | nibble(key[2 * i + 1]));
  return true;
}

struct Hasher::State {
  XXH3_state_t *s = XXH3_createState();
  ~State() { XXH3_freeState(s); }
};

Hasher::Hasher() : state_(std::make_unique<State>()) {
  POPC_ASSERT(state_->s && XXH3_128bits_reset(state_->s) == XXH_OK);
}
Hasher::~Hasher() = default;

void Hasher::update(const void *data, size_t size) { XXH3_128bits_update(state_->s, data, size); }

void Hasher::field(std::string_view name, std::span<const uint8_t> value) {
  uint64_t sizes[2] = {name.size(), value.size()};
  update(sizes, sizeof sizes);
  update(name.data(), name.size());
  update(value.data(), value.size());
}

void Hasher::field(std::string_view name, std::string_view value) {
  field(name, std::span<const uint8_t>(reinterpret_cast<const uint8_t *>(value.data()), value.size()));
}

Digest Hasher::digest() const { return fromHash(XXH3_128bits_digest(state_->s)); }

} // namespace popc::cache
