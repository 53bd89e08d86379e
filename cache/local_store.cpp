#include "cache/local_store.h"

#include "cache/entry.h"
#include "cache/size.h"
#include "support/error.h"
#include "support/file_io.h"
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
// An exclusive flock on `path` (created if missing), released on scope exit.
class FileLock {
public:
  FileLock(const fs::path &path, bool wait) : fd_(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (fd_.get() < 0)
      return;
    int rc;
    do
      rc = ::flock(fd_.get(), LOCK_EX | (wait ? 0 : LOCK_NB));
    while (rc != 0 && errno == EINTR);
    locked_ = rc == 0;
  }
  bool locked() const { return locked_; }

private:
  UniqueFd fd_;
  bool locked_ = false;
};


// Test hook (LocalStore::setTestPauses): sleeps there, so a test can SIGKILL a
// writer at that point.
void testPause(double seconds, const char *where) {
  if (seconds <= 0)
    return;
  std::fprintf(stderr, "cache: test pause %s\n", where);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

std::string tempName(std::string_view key) {
  static std::atomic<uint64_t> counter{0};
  uint64_t n = counter++ ^ uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  return fmt::format(".tmp-{}-{}-{:x}", key, ::getpid(), n);
}

int64_t nsOf(const struct timespec &t) { return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec; }

bool isKindName(const std::string &s) {
  if (s.empty() || s.size() > 16)
    return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
      return false;
  return true;
}

constexpr std::string_view kMetaSuffix = ".meta";

fs::path metaPathOf(const fs::path &payload) { return payload.string() + std::string(kMetaSuffix); }

// Deletes `path` only if it is still the file `st` describes: a writer may
// have renamed a fresh entry over the bad one since we opened it.
void unlinkIfSame(const fs::path &path, const struct stat &st) {
  struct stat now{};
  if (::stat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino && now.st_dev == st.st_dev)
    ::unlink(path.c_str());
}

// Deletes an entry: its header first, so no reader finds a header whose
// payload is gone.
void removeEntry(const fs::path &payload, const struct stat *payloadStat) {
  ::unlink(metaPathOf(payload).c_str());
  if (payloadStat)
    unlinkIfSame(payload, *payloadStat);
  else
    ::unlink(payload.c_str());
}

struct Walk {
  std::vector<EntryInfo> entries;
  std::vector<std::pair<fs::path, int64_t>> temps; // path, mtime: writes in progress or dead
  std::vector<std::pair<fs::path, int64_t>> orphans; // payloads without a header, headers without a payload
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
      std::map<std::string, struct stat> payloads, metas;
      for (const auto &file : fs::directory_iterator(sub.path(), ec)) {
        const std::string name = file.path().filename().string();
        struct stat st{};
        if (::lstat(file.path().c_str(), &st) != 0 || !S_ISREG(st.st_mode))
          continue;
        std::string key = name;
        const bool meta = name.ends_with(kMetaSuffix);
        if (meta)
          key.resize(name.size() - kMetaSuffix.size());
        if (name.starts_with(".tmp-"))
          w.temps.emplace_back(file.path(), nsOf(st.st_mtim));
        else if (isKey(key) && key.compare(0, 2, prefix) == 0)
          (meta ? metas : payloads)[key] = st;
      }
      for (const auto &[key, st] : metas) {
        auto p = payloads.find(key);
        if (p == payloads.end()) {
          w.orphans.emplace_back(sub.path() / (key + std::string(kMetaSuffix)), nsOf(st.st_mtim));
          continue;
        }
        w.entries.push_back({kind, key, sub.path() / key, uint64_t(p->second.st_size) + kHeaderSize,
                             nsOf(p->second.st_atim)});
      }
      for (const auto &[key, st] : payloads)
        if (!metas.count(key)) // a writer between its two renames, or one that died there
          w.orphans.emplace_back(sub.path() / key, nsOf(st.st_mtim));
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

// Deletes temporary files and half-renamed entries of writers that died
// (older than kStaleTempNs). Returns how many.
size_t removeStale(const Walk &w) {
  const int64_t now = nowNs();
  size_t removed = 0;
  for (const auto &files : {w.temps, w.orphans})
    for (const auto &[path, mtime] : files) {
      std::error_code ec;
      if (now - mtime > kStaleTempNs && fs::remove(path, ec))
        ++removed;
    }
  return removed;
}

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

namespace {

// CACHEDIR.TAG as the Cache Directory Tagging convention defines it (its first
// line is the fixed signature), plus the layout version of this cache.
std::string markerText() {
  return fmt::format("Signature: 8a477f597d28d172789f06886806bc55\n"
                     "# This directory is a popc cache (popc-onnx, poprun-lite --cache-dir; docs/cache.md).\n"
                     "# popc-layout-version: {}\n",
                     kCacheLayoutVersion);
}

// The layout version a marker records; nullopt if `path` is not a popc marker.
std::optional<int> readMarker(const fs::path &path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line) || line != "Signature: 8a477f597d28d172789f06886806bc55")
    return std::nullopt;
  const std::string key = "# popc-layout-version: ";
  while (std::getline(in, line))
    if (line.starts_with(key))
      return std::atoi(line.c_str() + key.size());
  return std::nullopt;
}

// Empty but for markers other processes are writing right now (their
// temporary files): several compilers may open a new cache at once.
bool isEmptyDirectory(const fs::path &dir) {
  std::error_code ec;
  const std::string markerTemp = std::string(kCacheMarkerName) + ".tmp.";
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (!e.path().filename().string().starts_with(markerTemp))
      return false;
  return !ec;
}

} // namespace

LocalStore::LocalStore(fs::path dir, uint64_t maxSize, OpenMode mode) : dir_(std::move(dir)), maxSize_(maxSize) {
  const std::string fix = mode == OpenMode::CreateOrOpen
                              ? "pass a new or empty directory to --cache-dir (or POPC_CACHE_DIR), or --no-cache"
                              : "popc-onnx --cache-dir DIR creates a cache in a new or empty directory";
  std::error_code ec;
  if (mode == OpenMode::CreateOrOpen) {
    fs::create_directories(dir_, ec);
    if (ec || !fs::is_directory(dir_))
      fail("{}: cannot create the cache directory: {} (pass a writable --cache-dir or unset POPC_CACHE_DIR)",
           dir_.string(), ec ? ec.message() : "not a directory");
  } else if (!fs::is_directory(dir_, ec)) {
    fail("{}: not a popc cache directory (it does not exist); {}", dir_.string(), fix);
  }
  const fs::path marker = dir_ / kCacheMarkerName;
  // True (after checking it) when the directory carries popc's marker.
  auto marked = [&] {
    if (!fs::exists(fs::symlink_status(marker, ec)))
      return false;
    const std::optional<int> version = readMarker(marker);
    if (!version)
      fail("{}: not a popc cache directory ({} is not popc's cache tag); popc will not touch it: {}",
           dir_.string(), kCacheMarkerName, fix);
    if (*version != kCacheLayoutVersion)
      fail("{}: a popc cache of layout version {}, this popc uses version {}; delete the directory (popc "
           "rebuilds it) or {}",
           dir_.string(), *version, kCacheLayoutVersion, fix);
    return true;
  };
  if (marked())
    return;
  if (mode == OpenMode::CreateOrOpen && isEmptyDirectory(dir_)) {
    writeFileAtomic(marker.string(), std::span(reinterpret_cast<const uint8_t *>(markerText().data()),
                                               markerText().size()));
    return;
  }
  // Another process may have created the cache between the two looks above:
  // its marker is renamed into place before any other file is made.
  if (marked())
    return;
  fail("{}: not a popc cache directory (it {} but has no {}); popc will not touch it: {}", dir_.string(),
       isEmptyDirectory(dir_) ? "is empty" : "holds other files", kCacheMarkerName, fix);
}

std::string LocalStore::describe() const { return "local " + dir_.string(); }

fs::path LocalStore::entryPath(std::string_view kind, std::string_view key) const {
  return dir_ / std::string(kind) / std::string(key.substr(0, 2)) / std::string(key);
}

namespace {

// The .meta sidecar: the entry header, then (once verified) a stamp of the
// payload file it was checked against.
constexpr size_t kStampSize = 32;
// Payloads modified less than this ago are re-hashed, never stamped (see local_store.h).
constexpr int64_t kStampMinAgeNs = int64_t(2) * 1000000000;

struct Stamp {
  uint64_t dev = 0, ino = 0, size = 0;
  int64_t mtimeNs = 0;
  bool operator==(const Stamp &) const = default;
};

Stamp stampOf(const struct stat &st) {
  return {uint64_t(st.st_dev), uint64_t(st.st_ino), uint64_t(st.st_size), nsOf(st.st_mtim)};
}

std::array<uint8_t, kStampSize> encodeStamp(const Stamp &s) {
  std::array<uint8_t, kStampSize> out{};
  const uint64_t words[4] = {s.dev, s.ino, s.size, uint64_t(s.mtimeNs)};
  for (int w = 0; w < 4; ++w)
    for (int b = 0; b < 8; ++b)
      out[size_t(w * 8 + b)] = uint8_t(words[w] >> (8 * b));
  return out;
}

Stamp decodeStamp(const uint8_t *p) {
  uint64_t words[4] = {};
  for (int w = 0; w < 4; ++w)
    for (int b = 0; b < 8; ++b)
      words[w] |= uint64_t(p[w * 8 + b]) << (8 * b);
  return {words[0], words[1], words[2], int64_t(words[3])};
}

struct Meta {
  std::vector<uint8_t> header; // kHeaderSize bytes when whole
  std::optional<Stamp> stamp;
};

// Reads a .meta file; nullopt (errno set) if it cannot be opened.
std::optional<Meta> readMeta(const fs::path &path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0)
    return std::nullopt;
  uint8_t buf[kHeaderSize + kStampSize + 1];
  const size_t got = readFull(fd.get(), buf, sizeof buf);
  Meta m;
  m.header.assign(buf, buf + std::min(got, kHeaderSize));
  if (got == kHeaderSize + kStampSize)
    m.stamp = decodeStamp(buf + kHeaderSize);
  return m;
}

// Writes `bytes` as `path` through a temporary file and a rename; false on failure.
bool replaceSmallFile(const fs::path &path, std::string_view key, std::span<const uint8_t> bytes, bool sync) {
  const fs::path tmp = path.parent_path() / (tempName(key) + std::string(kMetaSuffix));
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  bool ok = fd.get() >= 0 && writeAll(fd.get(), bytes.data(), bytes.size()) && (!sync || ::fsync(fd.get()) == 0);
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok)
    ::unlink(tmp.c_str());
  return ok;
}

// XXH3-128 of bytes [0, size) of `fd`, streamed in constant memory; nullopt on a short read.
std::optional<Digest> hashFile(int fd, uint64_t size) {
  std::vector<uint8_t> buffer(size_t(std::min<uint64_t>(std::max<uint64_t>(size, 1), 4u << 20)));
  XXH3_state_t *state = XXH3_createState();
  XXH3_128bits_reset(state);
  uint64_t off = 0;
  while (off < size) {
    const size_t n = preadFull(fd, buffer.data(), size_t(std::min<uint64_t>(buffer.size(), size - off)), off);
    if (n == 0)
      break;
    XXH3_128bits_update(state, buffer.data(), n);
    off += n;
  }
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, XXH3_128bits_digest(state));
  XXH3_freeState(state);
  if (off != size)
    return std::nullopt;
  Digest d;
  std::memcpy(d.bytes, c.digest, 16);
  return d;
}

// The payload read into memory: mapped when large, else copied.
struct Payload {
  std::shared_ptr<const void> owner;
  std::span<const uint8_t> bytes;
  bool mapped = false;
};

Payload readPayload(int fd, size_t size) {
  void *m = size >= (64u << 10) ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0) : MAP_FAILED;
  if (m != MAP_FAILED)
    return {std::shared_ptr<const void>(m, [size](const void *p) { ::munmap(const_cast<void *>(p), size); }),
            std::span<const uint8_t>(static_cast<const uint8_t *>(m), size), true};
  auto bytes = std::make_shared<std::vector<uint8_t>>(size);
  const size_t done = preadFull(fd, bytes->data(), size, 0);
  std::span<const uint8_t> span(bytes->data(), done); // short: the size check says truncated
  return {std::move(bytes), span};
}

// Makes `out` a hard link to `payload` (atomically replacing it). false when
// the file system will not link (another device, no link support, link limit).
bool linkOutput(const fs::path &payload, const std::string &out) {
  const std::string tmp = fmt::format("{}.tmp-link-{}-{:x}", out, ::getpid(),
                                      uint64_t(std::chrono::steady_clock::now().time_since_epoch().count()));
  if (::link(payload.c_str(), tmp.c_str()) != 0)
    return false;
  if (::rename(tmp.c_str(), out.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    fail("{}: cannot write file: {}", out, std::strerror(err));
  }
  // rename() between two names of one inode does nothing: `out` already was
  // this entry (a repeated hit), and the temporary name is still there.
  ::unlink(tmp.c_str());
  return true;
}

// Copies bytes [0, size) of `fd` to `out` in the kernel (temporary file + rename).
void copyOutput(int fd, uint64_t size, const std::string &out) {
  AtomicOutput output(out);
  loff_t in = 0;
  uint64_t left = size;
  std::vector<uint8_t> buffer;
  while (left) {
    ssize_t n = ::copy_file_range(fd, &in, output.fd(), nullptr, left, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) { // EXDEV/ENOSYS on old kernels or odd file systems: copy by hand
      buffer.resize(size_t(std::min<uint64_t>(left, 4u << 20)));
      while (left) {
        ssize_t r = ::pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), left), in);
        if (r <= 0 || !writeAll(output.fd(), buffer.data(), size_t(r)))
          output.failWrite();
        in += r;
        left -= uint64_t(r);
      }
      break;
    }
    left -= uint64_t(n);
  }
  output.commit();
}

// Least recently used = oldest atime, set explicitly (mounts may not update
// it). The mtime stays: the stamp depends on it. A read-only shared cache
// cannot be touched; that only makes its eviction order less exact.
void touchUse(int fd) {
  const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  ::futimens(fd, times);
}

// Why the payload (open as `fd`, described by `st`) does not match its header,
// or "". A stamp of this very file stands in for the hash when `trustStamp`;
// `mapped` (optional) is the payload already in memory. Sets *hashed.
std::string checkPayload(const Meta &meta, int fd, const struct stat &st, const Digest &key, const Payload *mapped,
                         bool trustStamp, bool *hashed) {
  const uint64_t size = uint64_t(st.st_size);
  *hashed = false;
  if (meta.header.size() < kHeaderSize)
    return fmt::format("truncated header: {} bytes, expected {}", meta.header.size(), kHeaderSize);
  std::optional<Digest> actual;
  *hashed = !(trustStamp && meta.stamp && *meta.stamp == stampOf(st));
  if (!*hashed)
    actual = recordedPayloadHash(meta.header);
  else if (mapped)
    actual = mapped->bytes.size() == size ? std::optional(hashBytes(mapped->bytes)) : std::nullopt;
  else
    actual = hashFile(fd, size);
  if (!actual)
    return fmt::format("truncated: read fewer than its {} bytes", size);
  return checkHeader(meta.header, kHeaderSize + size, key, *actual);
}

// After a full check, records the stamp that lets later reads skip the hash,
// once the payload is old enough that a change would show in its mtime.
void stampIfSettled(const fs::path &metaPath, std::string_view key, const Meta &meta, const struct stat &st) {
  if (nowNs() - nsOf(st.st_mtim) <= kStampMinAgeNs || (meta.stamp && *meta.stamp == stampOf(st)))
    return;
  std::vector<uint8_t> stamped(meta.header);
  auto s = encodeStamp(stampOf(st));
  stamped.insert(stamped.end(), s.begin(), s.end());
  replaceSmallFile(metaPath, key, stamped, false); // best effort: unstamped only costs a hash
}

} // namespace

// An entry whose header and payload checked out, with its payload file open.
struct LocalStore::Checked {
  fs::path path;
  int fd = -1;
  uint64_t size = 0; // payload bytes
  Payload mapped;    // when asked for
  ~Checked() {
    if (fd >= 0)
      ::close(fd);
  }
  Checked() = default;
  Checked(Checked &&o) noexcept : path(std::move(o.path)), fd(std::exchange(o.fd, -1)), size(o.size),
                                  mapped(std::move(o.mapped)) {}
};

std::optional<LocalStore::Checked> LocalStore::open(std::string_view kind, std::string_view key, bool mapPayload) {
  checkKind(kind);
  Digest digest;
  if (!parseKey(key, digest))
    fail("cache key '{}': expected 32 lowercase hex digits", key);
  Checked c;
  c.path = entryPath(kind, key);
  const fs::path metaPath = metaPathOf(c.path);
  auto miss = [&] {
    count(kind, "misses");
    return std::nullopt;
  };
  auto meta = readMeta(metaPath);
  if (!meta) {
    if (errno != ENOENT)
      logger()->warn("cannot read cache entry {}: {}; treating it as a miss", metaPath.string(), std::strerror(errno));
    return miss();
  }
  c.fd = ::open(c.path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st{};
  std::string why;
  bool hashed = false;
  if (c.fd < 0 || ::fstat(c.fd, &st) != 0) {
    if (errno != ENOENT) {
      logger()->warn("cannot read cache entry {}: {}; treating it as a miss", c.path.string(), std::strerror(errno));
      return miss();
    }
    why = "payload file missing";
  } else {
    c.size = uint64_t(st.st_size);
    if (mapPayload)
      c.mapped = readPayload(c.fd, size_t(c.size));
    why = checkPayload(*meta, c.fd, st, digest, mapPayload ? &c.mapped : nullptr, true, &hashed);
  }
  if (!why.empty()) {
    logger()->warn("deleting bad cache entry {}: {}; it will be rebuilt", c.path.string(), why);
    removeEntry(c.path, c.fd >= 0 ? &st : nullptr);
    updateCounters({{std::string(kind) + ".corrupt", 1},
                    {std::string(kind) + ".misses", 1},
                    {std::string(kind) + ".bytes", -int64_t(c.size + kHeaderSize)},
                    {std::string(kind) + ".entries", -1}});
    return std::nullopt;
  }
  if (hashed)
    stampIfSettled(metaPath, key, *meta, st);
  touchUse(c.fd);
  count(kind, "hits");
  return c;
}

std::optional<Blob> LocalStore::get(std::string_view kind, std::string_view key) {
  auto c = open(kind, key, true);
  if (!c)
    return std::nullopt;
  return Blob(c->mapped.owner, c->mapped.bytes, c->mapped.mapped);
}

std::optional<uint64_t> LocalStore::getToFile(std::string_view kind, std::string_view key,
                                              const std::string &outPath) {
  auto c = open(kind, key, false);
  if (!c)
    return std::nullopt;
  // Payload files are never modified in place, so what was verified is what
  // is linked or copied.
  if (!linkOutputs_ || !linkOutput(c->path, outPath))
    copyOutput(c->fd, c->size, outPath);
  return c->size;
}

void LocalStore::put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) {
  checkKind(kind);
  Digest digest;
  if (!parseKey(key, digest))
    fail("cache key '{}': expected 32 lowercase hex digits", key);
  const fs::path path = entryPath(kind, key);
  const fs::path metaPath = metaPathOf(path);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  struct stat st{};
  if (::stat(metaPath.c_str(), &st) == 0 && ::stat(path.c_str(), &st) == 0) {
    // Same key, same content: another process got there first.
    const struct timespec times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
    ::utimensat(AT_FDCWD, path.c_str(), times, 0);
    return;
  }
  const fs::path tmp = path.parent_path() / tempName(key);
  auto failWrite = [&](const char *what) {
    logger()->warn("cannot write cache entry {}: {}: {}; continuing without caching it", path.string(), what,
                   std::strerror(errno));
    ::unlink(tmp.c_str());
  };
  {
    // Read-only: a hard-linked output shares this file, and must not be able
    // to change the cache through it by accident.
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
    if (fd.get() < 0)
      return failWrite("create");
    const size_t half = payload.size() / 2;
    if (!writeAll(fd.get(), payload.data(), half))
      return failWrite("write");
    testPause(pauseMidWrite_, "POPC_CACHE_TEST_PAUSE_MID_WRITE");
    if (!writeAll(fd.get(), payload.data() + half, payload.size() - half))
      return failWrite("write");
    // Data reaches the disk before the names do: after a crash the entry is
    // whole or absent.
    if (::fsync(fd.get()) != 0)
      return failWrite("fsync");
  }
  testPause(pauseBeforeRename_, "POPC_CACHE_TEST_PAUSE_BEFORE_RENAME");
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return failWrite("rename");
  const auto header = encodeHeader(digest, payload);
  if (!replaceSmallFile(metaPath, key, header, true)) {
    logger()->warn("cannot write cache entry {}: {}; continuing without caching it", metaPath.string(),
                   std::strerror(errno));
    ::unlink(path.c_str());
    return;
  }
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
                   [](const EntryInfo *a, const EntryInfo *b) { return a->lastUseNs < b->lastUseNs; });
  for (const EntryInfo *e : order) {
    if (total <= maxSize)
      break;
    if (::unlink(metaPathOf(e->path).c_str()) != 0)
      continue;
    ::unlink(e->path.c_str());
    total -= e->size;
    r.removed++;
    r.freed += e->size;
    bytes[e->kind] -= int64_t(e->size);
    entries[e->kind] -= 1;
    evictions[e->kind] += 1;
  }
  removeStale(w);
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
    const fs::path metaPath = metaPathOf(e.path);
    auto meta = readMeta(metaPath);
    UniqueFd fd(::open(e.path.c_str(), O_RDONLY | O_CLOEXEC));
    struct stat st{};
    if (!meta || fd.get() < 0 || ::fstat(fd.get(), &st) != 0)
      continue; // evicted meanwhile
    ++r.checked;
    Digest digest;
    parseKey(e.key, digest);
    bool hashed = false;
    if (std::string why = checkPayload(*meta, fd.get(), st, digest, nullptr, false, &hashed); !why.empty()) {
      r.bad.push_back(e.path.string() + ": " + why);
      removeEntry(e.path, &st);
      corrupt[e.kind] += 1;
    } else {
      stampIfSettled(metaPath, e.key, *meta, st);
    }
  }
  r.staleTemps = removeStale(w);
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
  for (const auto &e : w.entries) {
    removeEntry(e.path, nullptr);
    ++removed;
  }
  for (const auto &files : {w.temps, w.orphans})
    for (const auto &[path, mtime] : files)
      fs::remove(path, ec);
  FileLock statsLock(dir_ / "stats.lock", true);
  fs::remove(dir_ / "stats", ec);
  return removed;
}

std::vector<EntryInfo> LocalStore::entries() const { return walk(dir_).entries; }

} // namespace popc::cache
