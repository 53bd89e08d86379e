// LocalStore::lockForCompute: one compile per key across processes (docs/cache.md,
// "Concurrent compiles"). flock, not a lock file's mere existence: the kernel
// drops a dead holder's lock, so a killed compiler never leaves a stale one.
#include "cache/local_store.h"
#include "support/log.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

namespace popc::cache {

namespace {

class FlockedFile final : public ComputeLock {
public:
  FlockedFile(int fd, std::filesystem::path path) : fd_(fd), path_(std::move(path)) {}
  ~FlockedFile() override {
    // Removed while still locked: a waiter that opened this inode re-checks
    // the name after locking and starts over on the new file.
    ::unlink(path_.c_str());
    ::close(fd_);
  }

private:
  int fd_;
  std::filesystem::path path_;
};

long holderPid(int fd) {
  char buf[32] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  return n > 0 ? std::strtol(buf, nullptr, 10) : 0;
}

bool sameFile(int fd, const std::filesystem::path &path) {
  struct stat a{}, b{};
  return ::fstat(fd, &a) == 0 && ::stat(path.c_str(), &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

} // namespace

std::unique_ptr<ComputeLock> LocalStore::lockForCompute(std::string_view kind, std::string_view key,
                                                        std::chrono::milliseconds timeout,
                                                        const std::function<void(long pid)> &onWait) {
  checkKind(kind);
  const std::filesystem::path entry = entryPath(kind, key);
  const std::filesystem::path path = entry.parent_path() / (".lock-" + std::string(key));
  std::error_code ec;
  std::filesystem::create_directories(path.parent_path(), ec);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool waited = false;
  for (;;) {
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      log::get("cache")->warn("cannot create the compile lock {}: {}; compiling without it", path.string(),
                               std::strerror(errno));
      return nullptr;
    }
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
      if (!sameFile(fd, path)) { // the holder we waited for removed it: lock the new one
        ::close(fd);
        continue;
      }
      const std::string pid = std::to_string(::getpid());
      if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) < 0)
        log::get("cache")->debug("cannot record the pid in {}", path.string());
      // A compute that finished between the caller's miss and this lock has
      // put the entry already: say so as a (zero-length) wait, so the caller
      // gets it instead of computing it again (MPI ranks starting together).
      if (!waited && std::filesystem::exists(entry, ec))
        onWait(0);
      return std::make_unique<FlockedFile>(fd, path);
    }
    if (errno != EWOULDBLOCK && errno != EINTR) {
      log::get("cache")->warn("cannot lock {}: {}; compiling without it", path.string(), std::strerror(errno));
      ::close(fd);
      return nullptr;
    }
    if (!waited) {
      onWait(holderPid(fd));
      waited = true;
    }
    ::close(fd);
    if (std::chrono::steady_clock::now() >= deadline) {
      log::get("cache")->warn("waited {} s for another process computing {} {}; computing it here too",
                              std::chrono::duration_cast<std::chrono::seconds>(timeout).count(), kind, key);
      return nullptr;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

} // namespace popc::cache
