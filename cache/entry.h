// One cache entry. On the wire (remote cache bodies) it is header + payload in
// one body; on disk (local_store.h) the header is a sidecar file beside the
// bare payload, so a hit can hard-link the payload as the user's output.
//
//   offset size
//        0    8  magic "POPCCAS\0"
//        8    4  format version (1), little-endian
//       12    4  header size (64)
//       16    8  payload size, little-endian
//       24   16  XXH3-128 of the payload (canonical, big-endian)
//       40   16  the entry's key (binary); a file under another key's name is foreign
//       56    8  zero
//       64    -  payload
#pragma once
#include "cache/hash.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace popc::cache {

constexpr size_t kHeaderSize = 64;
constexpr uint32_t kFormatVersion = 1;

std::array<uint8_t, kHeaderSize> encodeHeader(const Digest &key, std::span<const uint8_t> payload);

// Checks a whole entry (header + payload) read back for `key`. Returns "" when
// it is sound, else why not ("truncated: ...", "payload hash mismatch", ...).
std::string checkEntry(std::span<const uint8_t> entry, const Digest &key);
// The same checks for a streamed entry: its first kHeaderSize bytes, its total
// size and the XXH3-128 of everything after the header.
std::string checkHeader(std::span<const uint8_t> header, uint64_t entrySize, const Digest &key,
                        const Digest &payloadHash);
// The payload hash a header records (bytes 24..40); the header must be whole.
Digest recordedPayloadHash(std::span<const uint8_t> header);

} // namespace popc::cache
