// File I/O helpers shared by every layer: retrying reads and writes, and
// writing a whole file so that readers see the old file or the new one, never
// a part: the bytes go to a mkstemp() file in the same directory, which is then
// renamed over the path. Concurrent writers of one path each use their own
// temporary file. One implementation for popefs, profiles, .npz and reports.
#pragma once
#include <cstddef>
#include <cstdint>
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

} // namespace popc
