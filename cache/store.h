// The abstract content-addressed store: bytes by (kind, key). Kinds are
// namespaces ("exe" for executables, "obj" for JIT objects); keys are
// 32-hex-digit XXH3-128 digests computed by the caller from everything that
// decides the bytes. A store returns only payloads whose header and hash
// checked out (entry.h); anything else is a miss.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace popc::cache {

// Payload bytes owned by a vector or by a read-only mapping of the entry file.
class Blob {
public:
  Blob() = default;
  explicit Blob(std::vector<uint8_t> bytes);
  Blob(std::shared_ptr<const void> owner, std::span<const uint8_t> bytes, bool fileBacked = false)
      : owner_(std::move(owner)), bytes_(bytes), fileBacked_(fileBacked) {}
  std::span<const uint8_t> bytes() const { return bytes_; }
  size_t size() const { return bytes_.size(); }
  // A mapping of the entry file: its pages can be released and read back.
  bool fileBacked() const { return fileBacked_; }

private:
  std::shared_ptr<const void> owner_;
  std::span<const uint8_t> bytes_;
  bool fileBacked_ = false;
};

// Writes `bytes` to `path` through a temporary file in the same directory and
// a rename. Throws popc::Error naming the path.
void writeFileAtomic(const std::string &path, std::span<const uint8_t> bytes);

// kind: [a-z0-9]+ (a directory / URL segment). Throws popc::Error otherwise.
void checkKind(std::string_view kind);

// Held by the one process computing an entry that others may want (popc-onnx
// compiles a key once across processes). Released when destroyed, and by the
// kernel when its process dies, so a killed compiler never blocks the rest.
class ComputeLock {
public:
  virtual ~ComputeLock() = default;
};

class Store {
public:
  virtual ~Store() = default;
  // The verified payload, or nullopt (absent, unreadable, corrupt: never an error).
  virtual std::optional<Blob> get(std::string_view kind, std::string_view key) = 0;
  // Stores `payload`; failures are logged warnings, never errors.
  virtual void put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) = 0;
  // "local /path" or "remote http://..." for logs.
  virtual std::string describe() const = 0;
  // Writes the verified payload to `path` (temporary file + rename) and
  // returns its size, or nullopt on a miss. The local store streams the entry
  // (constant memory, in-kernel copy); others write get()'s bytes. Throws
  // popc::Error only if `path` cannot be written.
  virtual std::optional<uint64_t> getToFile(std::string_view kind, std::string_view key, const std::string &path);

  // Makes this process the one computing (kind, key). While another process
  // holds that right it waits, at most `timeout`; `onWait(pid)` is called once
  // when it starts waiting (pid 0 if unknown), or with pid 0 when the entry
  // appeared before the lock was taken (another compute just finished). Null
  // when the store has no local directory or the wait timed out: the caller
  // then computes anyway, which is correct, only slower. After a wait, get()
  // again before computing.
  virtual std::unique_ptr<ComputeLock> lockForCompute(std::string_view kind, std::string_view key,
                                                      std::chrono::milliseconds timeout,
                                                      const std::function<void(long pid)> &onWait);

  // get(), else compute() and put() its result.
  std::vector<uint8_t> getOrCompute(std::string_view kind, std::string_view key,
                                    const std::function<std::vector<uint8_t>()> &compute);
};

} // namespace popc::cache
