// popc-cache: inspect and maintain the content-addressed cache shared by
// popc-onnx (kind "exe") and poprun-lite (kind "obj"). See docs/cache.md.
#include "cache/local_store.h"
#include "cache/size.h"
#include "support/error.h"
#include "support/version.h"

#include "tools/cli_common.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <map>
#include <set>

namespace {

using namespace popc;

void printStats(const cache::LocalStore &store) {
  auto counters = store.counters();
  auto entries = store.entries();
  std::map<std::string, std::pair<uint64_t, uint64_t>> perKind; // entries, bytes
  std::set<std::string> kinds{"exe", "obj"};
  uint64_t totalBytes = 0;
  for (const auto &e : entries) {
    perKind[e.kind].first += 1;
    perKind[e.kind].second += e.size;
    totalBytes += e.size;
    kinds.insert(e.kind);
  }
  for (const auto &[name, value] : counters)
    kinds.insert(name.substr(0, name.find('.')));
  auto get = [&](const std::string &kind, const char *name) {
    auto it = counters.find(kind + "." + name);
    return it == counters.end() ? int64_t(0) : it->second;
  };
  fmt::print("cache directory   {}\n", store.dir().string());
  fmt::print("size              {} in {} entries (limit {})\n", cache::formatSize(totalBytes), entries.size(),
             cache::formatSize(store.maxSize()));
  fmt::print("{:<6} {:>8} {:>8} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>11}\n", "kind", "hits", "misses", "hit%",
             "remote-hit", "writes", "evicted", "corrupt", "entries", "size");
  for (const std::string &kind : kinds) {
    int64_t hits = get(kind, "hits"), misses = get(kind, "misses");
    std::string rate = hits + misses ? fmt::format("{:.1f}", 100.0 * double(hits) / double(hits + misses)) : "-";
    fmt::print("{:<6} {:>8} {:>8} {:>8} {:>10} {:>10} {:>8} {:>8} {:>8} {:>11}\n", kind, hits, misses, rate,
               get(kind, "remote_hits"), get(kind, "writes"), get(kind, "evictions"), get(kind, "corrupt"),
               perKind[kind].first, cache::formatSize(perKind[kind].second));
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{
      "popc-cache: inspect and maintain popc's content-addressed cache directory.\n\n"
      "popc-onnx --cache-dir DIR stores compiled executables in DIR (kind \"exe\"; key: the ONNX bytes,\n"
      "external data, every output-changing option, the target and the compiler's build id) and\n"
      "poprun-lite --cache-dir DIR stores JIT machine code (kind \"obj\"; key: the vertex bitcode,\n"
      "host CPU and features, LLVM version). Every entry carries its size and XXH3-128 and is checked\n"
      "on each read; a bad entry is deleted and rebuilt, never used. Many processes may share DIR.\n\n"
      "Examples:\n"
      "  popc-cache stats --cache-dir ~/.cache/popc          hits, misses, size and entries per kind\n"
      "  popc-cache verify                                  check every entry (POPC_CACHE_DIR); exit 1 if any was bad\n"
      "  popc-cache evict --max-size 1G                     drop least recently used entries down to 1 GiB\n"
      "  popc-cache clean                                   delete every entry and counter\n\n"
      "The directory comes from --cache-dir or POPC_CACHE_DIR. Design: docs/cache.md; CI use: docs/ci-caching.md.",
      "popc-cache"};
  std::string dir, maxSizeText = "5G", logLevel;
  app.add_option("--cache-dir", dir, "The cache directory (default: POPC_CACHE_DIR)")->envname("POPC_CACHE_DIR");
  app.add_option("--cache-max-size", maxSizeText, "The limit shown by stats (default 5G; as popc-onnx --cache-max-size)")
      ->envname("POPC_CACHE_MAX_SIZE");
  app.add_option("--log-level", logLevel, "trace, debug, info, warn, err or off (default: POPC_LOG_LEVEL or warn)");
  app.set_version_flag("--version", compilerVersion());
  app.require_subcommand(1);
  app.fallthrough(); // "popc-cache stats --cache-dir D" as well as "popc-cache --cache-dir D stats"
  auto *stats = app.add_subcommand("stats", "Hits, misses, hit rate, writes, evictions, corrupt entries, entries "
                                            "and size per kind (counters are shared by all processes)");
  auto *clean = app.add_subcommand("clean", "Delete every entry, temporary file and counter");
  auto *verify = app.add_subcommand(
      "verify", "Read every entry and check its header, size, key and XXH3-128; delete the bad ones and "
                "report them (exit 1 if any was bad); also delete temporary files of writers dead for an hour");
  auto *evict = app.add_subcommand("evict", "Delete least recently used entries until the cache is at most "
                                            "--max-size (entries are used when read or written)");
  std::string evictSize;
  evict->add_option("--max-size", evictSize, "Target size: bytes or K/M/G/T, e.g. 500M")->required();

  if (auto exitCode = popc::tools::parseCommandLine(app, argc, argv))
    return *exitCode;

  return popc::tools::runTool("popc-cache", [&]() -> int {
    popc::tools::applyLogLevel(logLevel);
    if (dir.empty())
      fail("no cache directory: pass --cache-dir DIR or set POPC_CACHE_DIR");
    cache::LocalStore store(dir, cache::parseSize(maxSizeText, "--cache-max-size"),
                            cache::OpenMode::ExistingCacheOnly);
    if (*stats) {
      printStats(store);
    } else if (*clean) {
      size_t n = store.clean();
      fmt::print("removed {} entries from {}\n", n, dir);
    } else if (*verify) {
      auto r = store.verify();
      for (const std::string &bad : r.bad)
        fmt::print("bad entry deleted: {}\n", bad);
      fmt::print("checked {} entries: {} bad (deleted){}\n", r.checked, r.bad.size(),
                 r.staleTemps ? fmt::format(", {} stale temporary files deleted", r.staleTemps) : "");
      return r.bad.empty() ? 0 : 1;
    } else if (*evict) {
      auto r = store.evict(cache::parseSize(evictSize, "--max-size"));
      fmt::print("evicted {} entries ({}); {} remain\n", r.removed, cache::formatSize(r.freed),
                 cache::formatSize(r.remaining));
    }
    return 0;
  });
}
