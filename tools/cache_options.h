// The cache flags popc-onnx and poprun-lite share (--cache-dir, --cache-max-size,
// --remote-cache, --no-cache with their POPC_* variables), and opening the store.
#pragma once
#include "cache/size.h"
#include "cache/tiered_store.h"

#include <CLI/CLI.hpp>

#include <cstdlib>
#include <memory>
#include <string>

namespace popc::tools {

struct CacheOptions {
  std::string dir, maxSize = "5G", remote;
  double remoteTimeout = 60; // seconds per remote request
  bool disabled = false;
  bool copyHits = false; // popc-onnx --cache-copy
  double lockTimeout = 600; // popc-onnx --cache-lock-timeout

  // `dirHelp` says what this tool keeps in the directory.
  void add(CLI::App &app, const std::string &dirHelp) {
    app.add_option("--cache-dir", dir, dirHelp + " (see docs/cache.md)")->envname("POPC_CACHE_DIR");
    app.add_option("--cache-max-size", maxSize,
                   "Evict least recently used cache entries above this size: bytes or K/M/G/T (default 5G)")
        ->envname("POPC_CACHE_MAX_SIZE");
    app.add_option("--remote-cache", remote,
                   "Shared HTTP cache (WebDAV/nginx or bazel-remote style) consulted after --cache-dir; "
                   "failures only warn")
        ->envname("POPC_REMOTE_CACHE");
    app.add_option("--remote-cache-timeout", remoteTimeout, "Seconds for one remote cache request (default 60)")
        ->envname("POPC_REMOTE_CACHE_TIMEOUT")
        ->check(CLI::PositiveNumber);
    app.add_flag("--no-cache", disabled, "Neither read nor write any cache");
  }

  static double seconds(const char *var) {
    const char *v = std::getenv(var);
    return v ? std::atof(v) : 0;
  }

  // The configured store, or null when no cache is asked for.
  std::shared_ptr<cache::Store> open() const {
    if (disabled || (dir.empty() && remote.empty()))
      return nullptr;
    cache::StoreOptions options;
    options.dir = dir;
    options.maxSize = cache::parseSize(maxSize, "--cache-max-size");
    options.remoteUrl = remote;
    options.remote.timeoutMs = long(remoteTimeout * 1000);
    options.linkOutputs = !copyHits;
    // Test hooks of the cache tests (test/e2e/cache): a writer sleeps there.
    options.testPauseMidWrite = seconds("POPC_CACHE_TEST_PAUSE_MID_WRITE");
    options.testPauseBeforeRename = seconds("POPC_CACHE_TEST_PAUSE_BEFORE_RENAME");
    return cache::openStore(options);
  }
};

} // namespace popc::tools
