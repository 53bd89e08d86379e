// LocalStore: one directory, shared safely by any number of processes.
//
//   DIR/<kind>/<first 2 hex digits>/<key>       the payload, bare (read-only file)
//   DIR/<kind>/<xx>/<key>.meta                  its header (entry.h) + a verification stamp
//   DIR/<kind>/<xx>/.tmp-<key>-<pid>-<n>[.meta] a write in progress (never read)
//   DIR/stats, DIR/stats.lock                   counters, updated under flock
//   DIR/evict.lock                              one evictor at a time
//   DIR/CACHEDIR.TAG                            marks DIR as a popc cache (written at creation)
//
// Only a directory that carries the marker is ever written to or cleaned: a
// user's directory passed by mistake is refused before any file is touched.
// The marker follows the Cache Directory Tagging convention (backup tools and
// `tar --exclude-caches` skip the directory) and names the layout version.
//
// Writes go to temporary files in the entry's own directory, are fsynced and
// renamed into place, payload first: an entry exists once its .meta does, and
// then its payload is whole. Every read checks the header (size, key) and the
// payload's XXH3-128; a bad entry is deleted, logged and reported as a miss.
// The bare payload lets getToFile() hard-link a hit instead of copying it.
//
// Hashing a large payload on every hit would cost more than the hit itself,
// so after a full check the .meta records a stamp (device, inode, size, mtime)
// and later reads whose payload still matches it skip the hash. Any write to
// the payload changes its mtime; to be sure a change cannot share the stamped
// mtime (file times are coarse clock ticks), only payloads whose mtime is
// older than two seconds get a stamp ("racy" entries are re-hashed, as git
// does for its index). A hit sets the payload's atime, which orders eviction
// (least recently used first) when the total size passes the maximum.
#pragma once
#include "cache/store.h"

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace popc::cache {

constexpr uint64_t kDefaultMaxSize = uint64_t(5) << 30; // 5 GiB

struct EntryInfo {
  std::string kind, key;
  std::filesystem::path path; // the payload; its header is path + ".meta"
  uint64_t size = 0;     // payload size + header size
  int64_t lastUseNs = 0; // the payload's atime
};

// The marker file and the layout version it records.
constexpr const char *kCacheMarkerName = "CACHEDIR.TAG";
constexpr int kCacheLayoutVersion = 1;

enum class OpenMode {
  CreateOrOpen,      // compilers and runners: a missing or empty directory becomes a cache
  ExistingCacheOnly, // maintenance (popc-cache): only a directory that already is a cache
};

class LocalStore : public Store {
public:
  // Opens the cache at `dir`. CreateOrOpen creates a missing or empty `dir` and
  // marks it. Throws popc::Error, before touching anything, for a directory that
  // is not a popc cache (no marker, or a marker of another layout version).
  explicit LocalStore(std::filesystem::path dir, uint64_t maxSize = kDefaultMaxSize,
                      OpenMode mode = OpenMode::CreateOrOpen);

  std::optional<Blob> get(std::string_view kind, std::string_view key) override;
  void put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) override;
  std::string describe() const override;
  // A hit hard-links the payload as `path` when it can (same file system),
  // else copies it; either way `path` is replaced atomically.
  std::optional<uint64_t> getToFile(std::string_view kind, std::string_view key, const std::string &path) override;
  // An exclusive flock on DIR/<kind>/<xx>/.lock-<key>, polled until `timeout`.
  // The holder writes its pid into the file (for the waiters' message) and
  // removes it on release; waiters re-check the inode after locking, so a
  // removed file is never locked twice.
  std::unique_ptr<ComputeLock> lockForCompute(std::string_view kind, std::string_view key,
                                              std::chrono::milliseconds timeout,
                                              const std::function<void(long pid)> &onWait) override;
  // false: getToFile() always copies (the output is then independent of the cache).
  void setLinkOutputs(bool link) { linkOutputs_ = link; }
  // Test hooks: seconds to sleep in the middle of writing an entry and just
  // before renaming it into place, so a test can kill a writer there.
  void setTestPauses(double midWrite, double beforeRename) {
    pauseMidWrite_ = midWrite;
    pauseBeforeRename_ = beforeRename;
  }

  // Adds `delta` to counter "<kind>.<name>" (hits, misses, writes, evictions,
  // corrupt, remote_hits, remote_misses, bytes, entries) under the stats lock.
  void count(std::string_view kind, std::string_view name, int64_t delta = 1);
  // All counters, "exe.hits" → 12. Sizes come from entries(), not from here.
  std::map<std::string, int64_t> counters() const;
  // Every entry (sorted by kind, then key); temporary and stray files are skipped.
  std::vector<EntryInfo> entries() const;

  struct VerifyReport {
    size_t checked = 0;
    std::vector<std::string> bad; // "<path>: <reason>", each deleted
    size_t staleTemps = 0;        // temporary files of dead writers, deleted
  };
  // Reads and checks every entry; deletes bad ones and temp files older than an hour.
  VerifyReport verify();

  struct EvictReport {
    size_t removed = 0;
    uint64_t freed = 0, remaining = 0;
  };
  // Deletes least recently used entries until the total is at most `maxSize`.
  EvictReport evict(uint64_t maxSize);
  // Deletes every entry, temporary file and counter. Returns entries removed.
  size_t clean();

  const std::filesystem::path &dir() const { return dir_; }
  uint64_t maxSize() const { return maxSize_; }

private:
  std::filesystem::path entryPath(std::string_view kind, std::string_view key) const;
  std::map<std::string, int64_t> updateCounters(const std::map<std::string, int64_t> &deltas,
                                                bool absolute = false);
  void maybeEvict(const std::map<std::string, int64_t> &counters);

  struct Checked;
  std::optional<Checked> open(std::string_view kind, std::string_view key, bool mapPayload);

  std::filesystem::path dir_;
  uint64_t maxSize_;
  bool linkOutputs_ = true;
  double pauseMidWrite_ = 0, pauseBeforeRename_ = 0;
};

} // namespace popc::cache
