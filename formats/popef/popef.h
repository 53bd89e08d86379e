// Reading and writing popef executables. Every reader path verifies before
// use: the flatbuffers Verifier, then semantic checks (indices in range, every
// byte range inside its tile's memory, program tree well-formed).
#pragma once
#include "formats/popef/popef_generated.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace popc::popef {

constexpr uint32_t kFormatVersion = 1;

// Packs an executable with the "POPF" identifier. Deterministic.
std::vector<uint8_t> serialize(const ::popef::fb::ExecutableT &exe);
// Writes bytes to `path` atomically (temporary file + rename).
void writeFile(const std::string &path, std::span<const uint8_t> bytes);

// A verified executable, backed by an mmap of the file or by owned bytes.
class Executable {
public:
  // Throws popc::Error("<path>: <what is wrong>") for unreadable, truncated,
  // corrupt or semantically invalid files.
  static std::shared_ptr<const Executable> open(const std::string &path);
  static std::shared_ptr<const Executable> fromBytes(std::vector<uint8_t> bytes,
                                                     const std::string &label = "<memory>");
  ~Executable();

  const ::popef::fb::Executable &root() const { return *root_; }
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string &label() const { return label_; }

private:
  Executable() = default;
  void verify();
  std::string label_;
  const uint8_t *data_ = nullptr;
  size_t size_ = 0;
  void *mapping_ = nullptr;     // munmap on destruction if set
  std::vector<uint8_t> owned_;  // when built from bytes
  const ::popef::fb::Executable *root_ = nullptr;
};

} // namespace popc::popef
