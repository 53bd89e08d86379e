// Cache keys: XXH3-128 digests written as 32 lowercase hex digits.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace popc::cache {

struct Digest {
  uint8_t bytes[16] = {}; // big-endian high 64 bits, then low 64 bits (XXH128_canonical_t)
  std::string hex() const;
  bool operator==(const Digest &) const = default;
};

Digest hashBytes(std::span<const uint8_t> bytes);
// True for 32 lowercase hex digits (what hex() writes). Keys name files, so
// nothing else is accepted.
bool isKey(std::string_view key);
// Parses a key; false if !isKey(key).
bool parseKey(std::string_view key, Digest &out);

// Streaming XXH3-128. field() frames each value with its name and length, so
// ("ab","c") and ("a","bc") never hash alike.
class Hasher {
public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher &) = delete;
  Hasher &operator=(const Hasher &) = delete;
  void update(const void *data, size_t size);
  void field(std::string_view name, std::span<const uint8_t> value);
  void field(std::string_view name, std::string_view value);
  Digest digest() const;

private:
  struct State;
  std::unique_ptr<State> state_;
};

} // namespace popc::cache
