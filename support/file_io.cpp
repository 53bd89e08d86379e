#include "support/file_io.h"

#include "support/error.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace popc {

bool writeAll(int fd, const void *data, size_t size) {
  const auto *p = static_cast<const uint8_t *>(data);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      if (n == 0)
        errno = EIO;
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}

namespace {

// Calls `chunk(buffer, size, done)` (a read or pread of the rest) until `size`
// bytes, end of file or an error, retrying on EINTR: the bytes read.
template <typename Chunk> size_t fill(void *data, size_t size, Chunk chunk) {
  auto *p = static_cast<uint8_t *>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = chunk(p + done, size - done, done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    done += size_t(n);
  }
  return done;
}

} // namespace

size_t readFull(int fd, void *data, size_t size) {
  return fill(data, size, [fd](uint8_t *p, size_t n, size_t) { return ::read(fd, p, n); });
}

size_t preadFull(int fd, void *data, size_t size, uint64_t offset) {
  return fill(data, size,
              [fd, offset](uint8_t *p, size_t n, size_t done) { return ::pread(fd, p, n, off_t(offset + done)); });
}

void writeFileAtomically(const std::string &path, std::span<const uint8_t> bytes) {
  std::string tmp = path + ".tmp.XXXXXX";
  const int fd = ::mkstemp(tmp.data());
  if (fd < 0)
    fail("{}: cannot create temporary file: {}", path, std::strerror(errno));
  ::fchmod(fd, 0644); // mkstemp's 0600 would hide the file from other users
  auto abandon = [&](const char *what, int err) {
    ::unlink(tmp.c_str());
    fail("{}: {}: {}", path, what, std::strerror(err));
  };
  if (!writeAll(fd, bytes.data(), bytes.size())) {
    const int err = errno;
    ::close(fd);
    abandon("write failed", err);
  }
  if (::close(fd) != 0)
    abandon("write failed", errno);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    abandon("cannot replace file", errno);
}

void writeFileAtomically(const std::string &path, std::string_view text) {
  writeFileAtomically(path, std::span(reinterpret_cast<const uint8_t *>(text.data()), text.size()));
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0)
    ::close(fd_);
}

FileBytes readWholeFile(const std::string &path, uint64_t maxBytes, std::string_view tooLarge) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid())
    fail("{}: cannot open file: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode))
    fail("{}: cannot open file: not a regular file", path);
  FileBytes file;
  file.size = size_t(st.st_size);
  if (file.size > maxBytes)
    fail("{}: {} bytes, {}", path, file.size, tooLarge);
  file.data.reset(new char[std::max<size_t>(file.size, 1)]);
  errno = 0;
  const size_t got = readFull(fd.get(), file.data.get(), file.size);
  if (got != file.size)
    fail("{}: cannot read file: {}", path, got < file.size && errno ? std::strerror(errno) : "it changed size");
  return file;
}

} // namespace popc
