#include "cache/local_store.h"

#include "cache/entry.h"
#include "cache/size.h"
#include "support/error.h"
#include "support/log.h"

#include <xxhash.h>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;

namespace popc::cache {

namespace {

auto logger() { return log::get("cache"); }

// Closes a file descriptor on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0)
      ::close(fd);
  }
  Fd(const Fd &) = delete;
  Fd &operator=(const Fd &) = delete;
};

// An exclusive flock on `path` (created if missing), released on scope exit.
class FileLock {
public:
  FileLock(const fs::path &path, bool wait) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_.fd < 0)
      return;
    int rc;
    do
      rc = ::flock(fd_.fd, LOCK_EX | (wait ? 0 : LOCK_NB));
    while (rc != 0 && errno == EINTR);
    locked_ = rc == 0;
  }
  bool locked() const { return locked_; }

private:
  Fd fd_;
  bool locked_ = false;
};

bool writeAll(int fd, const uint8_t *data, size_t size) {
  while (size) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

// Test hook: POPC_CACHE_TEST_PAUSE_<what>=SECONDS sleeps there, so a test can
// SIGKILL a writer at that point.
void testPause(const char *var) {
  if (const char *s = std::getenv(var)) {
    std::fprintf(stderr, "cache: test pause %s\n", var);
    std::this_thread::sleep_for(std::chrono::duration<double>(std::atof(s)));
  }
}

std::string tempName(std::string_view key) {
  static std::atomic<uint64_t> counter{0};
  uint64_t n = counter++ ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  return fmt::format(".tmp-{}-{}-{:x}", key, ::getpid(), n);
}

int64_t mtimeNs(const struct stat &st) { return int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec; }

bool isKindName(const std::string &s) {
  if (s.empty() || s.size() > 16)
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

// Deletes `path` only if it is still the file `st` describes: a writer may
// have renamed a fresh entry over the bad one since we opened it.
void unlinkIfSame(const fs::path &path, const struct stat &st) {
  struct stat now{};
  if (::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
    ::unlink(path.c_str());
}

struct Walk {
  std::vector<EntryInfo> entries;
  std::vector<std::pair<fs::path, int64_t>> temps; // path, mtime
};

Walk walk(const fs::path &dir) {
  Walk w;
  std::error_code ec;
  for (const auto &kindDir : fs::directory_iterator(dir, ec)) {
    const std::string kind = kindDir.path().filename().string();
    if (!isKindName(kind) || !kindDir.is_directory(ec))
      continue;
    for (const auto &sub : fs::directory_iterator(kindDir.path(), ec)) {
      const std::string prefix = sub.path().filename().string();
      if (prefix.size() != 2 || !sub.is_directory(ec))
        continue;
      for (const auto &file : fs::directory_iterator(sub.path(), ec)) {
        const std::string name = file.path().filename().string();
        struct stat st{};
        if (::lstat(file.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode))
          continue;
        if (name.starts_with(".tmp-"))
          w.temps.emplace_back(file.path(), mtimeNs(st));
        else if (isKey(name) && name.compare(0, 2, prefix) == 0)
          w.entries.push_back({kind, name, file.path(), uint64_t(st.st_size), mtimeNs(st)});
      }
    }
  }
  std::sort(w.entries.begin(), w.entries.end(),
            [](const EntryInfo &a, const EntryInfo &b) { return std::tie(a.kind, a.key) < std::tie(b.kind, b.key); });
  return w;
}

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A temporary file this old belongs to a writer that died (writes take seconds).
constexpr int64_t kStaleTempNs = int64_t(3600) * 1000000000;

// Output files: temporary name beside `path`, then rename, like popef::writeFile.
class AtomicOutput {
public:
  explicit AtomicOutput(const std::string &path) : path_(path), tmp_(path + ".tmp.XXXXXX") {
    fd_ = ::mkstemp(tmp_.data());
    if (fd_ < 0)
      fail("{}: cannot create temporary file: {}", path, std::strerror(errno));
    ::fchmod(fd_, 0644);
  }
  ~AtomicOutput() {
    if (fd_ >= 0) {
      ::close(fd_);
      ::unlink(tmp_.c_str());
    }
  }
  int fd() const { return fd_; }
  [[noreturn]] void failWrite() { fail("{}: write failed: {}", path_, std::strerror(errno)); }
  void commit() {
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0 || ::rename(tmp_.c_str(), path_.c_str()) != 0) {
      int err = errno;
      ::unlink(tmp_.c_str());
      fail("{}: cannot write file: {}", path_, std::strerror(err));
    }
  }

private:
  std::string path_, tmp_;
  int fd_ = -1;
};

} // namespace

void writeFileAtomic(const std::string &path, std::span<const uint8_t> bytes) {
  AtomicOutput out(path);
  if (!writeAll(out.fd(), bytes.data(), bytes.size()))
    out.failWrite();
  out.commit();
}

LocalStore::LocalStore(fs::path dir, uint64_t maxSize) : dir_(std::move(dir)), maxSize_(maxSize) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec || !fs::is_directory(dir_))
    fail("{}: cannot create the cache directory: {} (pass a writable --cache-dir or unset POPC_CACHE_DIR)",
         dir_.string(), ec ? ec.message() : "not a directory");
}

std::string LocalStore::describe() const { return "local " + dir_.string(); }

fs::path LocalStore::entryPath(std::string_view kind, std::string_view key) const {
  return dir_ / std::string(kind) / std::string(key.substr(0, 2)) / std::string(key);
}

std::optional<Blob> LocalStore::get(std::string_view kind, std::string_view key) {
  checkKind(kind);
  Digest digest;
  if (!parseKey(key, digest))
    fail("cache key '{}': expected 32 lowercase hex digits", key);
  const fs::path path = entryPath(kind, key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) {
    if (errno != ENOENT)
      logger()->warn("cannot read cache entry {}: {}; treating it as a miss", path.string(), std::strerror(errno));
    count(kind, "misses");
    return std::nullopt;
  }
  struct stat st{};
  if (::fstat(fd.fd, &st) != 0) {
    count(kind, "misses");
    return std::nullopt;
  }
  const size_t size = size_t(st.st_size);
  std::shared_ptr<const void> owner;
  std::span<const uint8_t> entry;
  void *m = size >= (64u << 10) ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.fd, 0)
                                : MAP_FAILED;
  if (m != MAP_FAILED) {
    owner = std::shared_ptr<const void>(m, [size](const void *p) { ::munmap(const_cast<void *>(p), size); });
    entry = std::span<const uint8_t>(static_cast<const uint8_t *>(m), size);
  } else {
    auto bytes = std::make_shared<std::vector<uint8_t>>(size);
    size_t done = 0;
    while (done < size) {
      ssize_t n = ::pread(fd.fd, bytes->data() + done, size - done, off_t(done));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      done += size_t(n);
    }
    entry = std::span<const uint8_t>(bytes->data(), done); // short read: checkEntry says truncated
    owner = std::move(bytes);
  }
  if (std::string why = checkEntry(entry, digest); !why.empty()) {
    logger()->warn("deleting bad cache entry {}: {}; it will be rebuilt", path.string(), why);
    unlinkIfSame(path, st);
    updateCounters({{std::string(kind) + ".corrupt", 1},
                    {std::string(kind) + ".misses", 1},
                    {std::string(kind) + ".bytes", -int64_t(size)},
                    {std::string(kind) + ".entries", -1}});
    return std::nullopt;
  }
  // Least recently used = oldest mtime. A read-only shared cache cannot be
  // touched; that only makes its eviction order less exact.
  const struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  ::futimens(fd.fd, now);
  count(kind, "hits");
  return Blob(std::move(owner), entry.subspan(kHeaderSize));
}

std::optional<uint64_t> LocalStore::getToFile(std::string_view kind, std::string_view key,
                                              const std::string &outPath) {
  checkKind(kind);
  Digest digest;
  if (!parseKey(key, digest))
    fail("cache key '{}': expected 32 lowercase hex digits", key);
  const fs::path path = entryPath(kind, key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  struct stat st{};
  if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0) {
    if (fd.fd >= 0 || errno != ENOENT)
      logger()->warn("cannot read cache entry {}: {}; treating it as a miss", path.string(), std::strerror(errno));
    count(kind, "misses");
    return std::nullopt;
  }
  // Verify by streaming the file through XXH3 (constant memory)...
  const uint64_t size = uint64_t(st.st_size);
  std::vector<uint8_t> buffer(size_t(std::min<uint64_t>(size, 4u << 20)));
  std::string why;
  std::vector<uint8_t> header;
  {
    uint64_t off = 0;
    XXH3_state_t *state = XXH3_createState();
    XXH3_128bits_reset(state);
    while (off < size) {
      ssize_t n = ::pread(fd.fd, buffer.data(), std::min<uint64_t>(buffer.size(), size - off), off_t(off));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      size_t begin = 0;
      if (header.size() < kHeaderSize) {
        begin = std::min<size_t>(kHeaderSize - header.size(), size_t(n));
        header.insert(header.end(), buffer.begin(), buffer.begin() + begin);
      }
      XXH3_128bits_update(state, buffer.data() + begin, size_t(n) - begin);
      off += uint64_t(n);
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state));
    XXH3_freeState(state);
    Digest d;
    std::memcpy(d.bytes, c.digest, 16);
    why = off != size ? "short read" : checkHeader(header, size, digest, d);
  }
  if (!why.empty()) {
    logger()->warn("deleting bad cache entry {}: {}; it will be rebuilt", path.string(), why);
    unlinkIfSame(path, st);
    updateCounters({{std::string(kind) + ".corrupt", 1},
                    {std::string(kind) + ".misses", 1},
                    {std::string(kind) + ".bytes", -int64_t(size)},
                    {std::string(kind) + ".entries", -1}});
    return std::nullopt;
  }
  // ...then copy the payload in the kernel (entries are never modified in
  // place, so what was verified is what is copied).
  AtomicOutput out(outPath);
  loff_t in = kHeaderSize;
  uint64_t left = size - kHeaderSize;
  while (left) {
    ssize_t n = ::copy_file_range(fd.fd, &in, out.fd(), nullptr, left, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) { // EXDEV/ENOSYS on old kernels or odd file systems: copy by hand
      while (left) {
        ssize_t r = ::pread(fd.fd, buffer.data(), std::min<uint64_t>(buffer.size(), left), in);
        if (r <= 0 || !writeAll(out.fd(), buffer.data(), size_t(r)))
          out.failWrite();
        in += r;
        left -= uint64_t(r);
      }
      break;
    }
    left -= uint64_t(n);
  }
  out.commit();
  const struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
  ::futimens(fd.fd, now);
  count(kind, "hits");
  return size - kHeaderSize;
}

void LocalStore::put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) {
  checkKind(kind);
  Digest digest;
  if (!parseKey(key, digest))
    fail("cache key '{}': expected 32 lowercase hex digits", key);
  const fs::path path = entryPath(kind, key);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  struct stat st{};
  if (::stat(path.c_str(), &st) == 0) {
    // Same key, same content: another process got there first.
    const struct timespec now[2] = {{0, UTIME_NOW}, {0, UTIME_NOW}};
    ::utimensat(AT_FDCWD, path.c_str(), now, 0);
    return;
  }
  const fs::path tmp = path.parent_path() / tempName(key);
  auto failWrite = [&](const char *what) {
    logger()->warn("cannot write cache entry {}: {}: {}; continuing without caching it", path.string(), what,
                   std::strerror(errno));
    ::unlink(tmp.c_str());
  };
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
    if (fd.fd < 0)
      return failWrite("create");
    const auto header = encodeHeader(digest, payload);
    const size_t half = payload.size() / 2;
    if (!writeAll(fd.fd, header.data(), header.size()) || !writeAll(fd.fd, payload.data(), half))
      return failWrite("write");
    testPause("POPC_CACHE_TEST_PAUSE_MID_WRITE");
    if (!writeAll(fd.fd, payload.data() + half, payload.size() - half))
      return failWrite("write");
    // Data reaches the disk before the name does: after a crash the entry is
    // whole or absent.
    if (::fsync(fd.fd) != 0)
      return failWrite("fsync");
  }
  testPause("POPC_CACHE_TEST_PAUSE_BEFORE_RENAME");
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return failWrite("rename");
  const std::string k(kind);
  auto counters = updateCounters({{k + ".writes", 1},
                                  {k + ".bytes", int64_t(kHeaderSize + payload.size())},
                                  {k + ".entries", 1}});
  maybeEvict(counters);
}

void LocalStore::count(std::string_view kind, std::string_view name, int64_t delta) {
  updateCounters({{std::string(kind) + "." + std::string(name), delta}});
}

std::map<std::string, int64_t> LocalStore::counters() const {
  std::map<std::string, int64_t> c;
  std::ifstream in(dir_ / "stats");
  std::string name;
  int64_t value;
  while (in >> name >> value)
    c[name] = value;
  return c;
}

std::map<std::string, int64_t> LocalStore::updateCounters(const std::map<std::string, int64_t> &deltas,
                                                          bool absolute) {
  FileLock lock(dir_ / "stats.lock", true);
  if (!lock.locked())
    return {}; // a read-only cache: counters are best effort
  auto c = counters();
  for (const auto &[name, delta] : deltas) {
    if (absolute)
      c[name] = delta;
    else
      c[name] = std::max<int64_t>(0, c[name] + delta);
  }
  // Replaced by rename under the lock: a crash leaves the old or the new file.
  const fs::path tmp = dir_ / fmt::format("stats.tmp-{}", ::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto &[name, value] : c)
      out << name << ' ' << value << '\n';
  }
  std::error_code ec;
  fs::rename(tmp, dir_ / "stats", ec);
  if (ec)
    fs::remove(tmp, ec);
  return c;
}

void LocalStore::maybeEvict(const std::map<std::string, int64_t> &counters) {
  int64_t total = 0;
  for (const auto &[name, value] : counters)
    if (name.ends_with(".bytes"))
      total += value;
  if (uint64_t(total) <= maxSize_)
    return;
  // One evictor at a time; if another process is at it, it will get us under.
  FileLock lock(dir_ / "evict.lock", false);
  if (!lock.locked())
    return;
  auto r = evict(maxSize_);
  logger()->info("cache {} over its {} limit: evicted {} least recently used entries ({})", dir_.string(),
                 formatSize(maxSize_), r.removed, formatSize(r.freed));
}

LocalStore::EvictReport LocalStore::evict(uint64_t maxSize) {
  FileLock lock(dir_ / "evict.lock.walk", true);
  Walk w = walk(dir_);
  EvictReport r;
  std::map<std::string, int64_t> bytes, entries, evictions;
  uint64_t total = 0;
  for (const auto &e : w.entries) {
    total += e.size;
    bytes[e.kind] += int64_t(e.size);
    entries[e.kind] += 1;
  }
  std::vector<const EntryInfo *> order;
  for (const auto &e : w.entries)
    order.push_back(&e);
  std::stable_sort(order.begin(), order.end(),
                   [](const EntryInfo *a, const EntryInfo *b) { return a->mtimeNs < b->mtimeNs; });
  for (const EntryInfo *e : order) {
    if (total <= maxSize)
      break;
    std::error_code ec;
    if (!fs::remove(e->path, ec))
      continue;
    total -= e->size;
    r.removed++;
    r.freed += e->size;
    bytes[e->kind] -= int64_t(e->size);
    entries[e->kind] -= 1;
    evictions[e->kind] += 1;
  }
  const int64_t now = nowNs();
  for (const auto &[path, mtime] : w.temps)
    if (now - mtime > kStaleTempNs) {
      std::error_code ec;
      fs::remove(path, ec);
    }
  r.remaining = total;
  // The walk is the truth: reset the size counters to it.
  std::map<std::string, int64_t> absolute;
  auto current = counters();
  for (const auto &[name, value] : current)
    if (name.ends_with(".bytes") || name.ends_with(".entries"))
      absolute[name] = 0;
  for (const auto &[kind, b] : bytes)
    absolute[kind + ".bytes"] = b;
  for (const auto &[kind, n] : entries)
    absolute[kind + ".entries"] = n;
  updateCounters(absolute, true);
  std::map<std::string, int64_t> deltas;
  for (const auto &[kind, n] : evictions)
    deltas[kind + ".evictions"] = n;
  if (!deltas.empty())
    updateCounters(deltas);
  return r;
}

LocalStore::VerifyReport LocalStore::verify() {
  VerifyReport r;
  Walk w = walk(dir_);
  std::map<std::string, int64_t> corrupt;
  for (const auto &e : w.entries) {
    Fd fd(::open(e.path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st{};
    if (fd.fd < 0 || ::fstat(fd.fd, &st) != 0)
      continue; // evicted meanwhile
    std::vector<uint8_t> bytes(size_t(st.st_size));
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = ::pread(fd.fd, bytes.data() + done, bytes.size() - done, off_t(done));
      if (n <= 0 && errno != EINTR)
        break;
      if (n > 0)
        done += size_t(n);
    }
    bytes.resize(done);
    ++r.checked;
    Digest digest;
    parseKey(e.key, digest);
    if (std::string why = checkEntry(bytes, digest); !why.empty()) {
      r.bad.push_back(e.path.string() + ": " + why);
      unlinkIfSame(e.path, st);
      corrupt[e.kind] += 1;
    }
  }
  const int64_t now = nowNs();
  for (const auto &[path, mtime] : w.temps)
    if (now - mtime > kStaleTempNs) {
      std::error_code ec;
      if (fs::remove(path, ec))
        ++r.staleTemps;
    }
  std::map<std::string, int64_t> deltas;
  for (const auto &[kind, n] : corrupt)
    deltas[kind + ".corrupt"] = n;
  if (!deltas.empty())
    updateCounters(deltas);
  if (!r.bad.empty())
    evict(UINT64_MAX); // recount sizes
  return r;
}

size_t LocalStore::clean() {
  FileLock lock(dir_ / "evict.lock.walk", true);
  Walk w = walk(dir_);
  size_t removed = 0;
  std::error_code ec;
  for (const auto &e : w.entries)
    removed += fs::remove(e.path, ec) ? 1 : 0;
  for (const auto &[path, mtime] : w.temps)
    fs::remove(path, ec);
  FileLock statsLock(dir_ / "stats.lock", true);
  fs::remove(dir_ / "stats", ec);
  return removed;
}

std::vector<EntryInfo> LocalStore::entries() const { return walk(dir_).entries; }

} // namespace popc::cache
