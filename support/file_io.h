// File I/O helpers shared by every layer: retrying reads and writes, and
// writing a whole file so that readers see the old file or the new one, never
// a part: the bytes go to a mkstemp() file in the same directory, which is then
// renamed over the path. Concurrent writers of one path each use their own
// temporary file. One implementation for popefs, profiles, .npz and reports.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace popc {

// Throws popc::Error naming `path`: "cannot create temporary file: ...",
// "write failed: ..." (e.g. a full disk) or "cannot replace file: ...".
void writeFileAtomically(const std::string &path, std::span<const uint8_t> bytes);
void writeFileAtomically(const std::string &path, std::string_view text);

// write(2) until all `size` bytes are written, retrying on EINTR and short
// writes; false (errno set) on any other failure.
bool writeAll(int fd, const void *data, size_t size);

// read(2) / pread(2) until `size` bytes, end of file or an error (errno set),
// retrying on EINTR and short reads: the bytes read.
size_t readFull(int fd, void *data, size_t size);
size_t preadFull(int fd, void *data, size_t size, uint64_t offset);

// An owned file descriptor, closed when it goes out of scope (-1: none).
class UniqueFd {
public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  ~UniqueFd();
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }

private:
  int fd_;
};

// A whole file's bytes, read with one read(2) into a buffer of its size (no
// zero-fill, no stream copies: models run to hundreds of MB).
struct FileBytes {
  std::unique_ptr<char[]> data;
  size_t size = 0;
  std::string_view view() const { return {data.get(), size}; }
};

// Reads the regular file at `path` whole. Throws popc::Error naming the path:
// "cannot open file: <reason>", "not a regular file", "cannot read file:
// <reason>", or, when it is larger than `maxBytes`, "<size> bytes, <tooLarge>".
FileBytes readWholeFile(const std::string &path, uint64_t maxBytes = UINT64_MAX, std::string_view tooLarge = {});

} // namespace popc
