// LocalStore: one directory, shared safely by any number of processes.
//
//   DIR/<kind>/<first 2 hex digits>/<key>    entries (entry.h format)
//   DIR/<kind>/<xx>/.tmp-<key>-<pid>-<n>     a write in progress (never read)
//   DIR/stats, DIR/stats.lock                counters, updated under flock
//   DIR/evict.lock                           one evictor at a time
//
// Writes go to a temporary file in the entry's own directory, are fsynced and
// renamed into place, so a reader sees a whole entry or none. Every read
// checks the header and payload hash; a bad entry is deleted, logged and
// reported as a miss. A hit sets the entry's mtime, which orders eviction
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
  std::filesystem::path path;
  uint64_t size = 0;  // file size including the header
  int64_t mtimeNs = 0; // last use
};

class LocalStore : public Store {
public:
  // Creates `dir` if needed; throws popc::Error if it cannot.
  explicit LocalStore(std::filesystem::path dir, uint64_t maxSize = kDefaultMaxSize);

  std::optional<Blob> get(std::string_view kind, std::string_view key) override;
  void put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) override;
  std::string describe() const override;
  std::optional<uint64_t> getToFile(std::string_view kind, std::string_view key, const std::string &path) override;

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

  std::filesystem::path dir_;
  uint64_t maxSize_;
};

} // namespace popc::cache
