// RemoteStore: a shared HTTP cache for CI fleets. GET and PUT of
// URL/<kind>/<key>, the body being the entry exactly as stored locally
// (entry.h), so any WebDAV server (nginx dav_methods PUT) or a plain
// content-addressed HTTP store (bazel-remote-style) serves it. Nothing here
// ever fails a build: a down or slow server, an HTTP error or a body that does
// not check out is a warning and a miss. After the first connection failure
// the remote is skipped for the rest of the process (no repeated timeouts).
#pragma once
#include "cache/store.h"

#include <atomic>
#include <string>

namespace popc::cache {

struct RemoteOptions {
  long connectTimeoutMs = 2000;
  long timeoutMs = 60000; // whole request (the tools: --remote-cache-timeout, POPC_REMOTE_CACHE_TIMEOUT)
};

class RemoteStore : public Store {
public:
  explicit RemoteStore(std::string url, RemoteOptions options = {});
  std::optional<Blob> get(std::string_view kind, std::string_view key) override;
  void put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) override;
  std::string describe() const override;

private:
  std::string urlFor(std::string_view kind, std::string_view key) const;
  std::string url_;
  RemoteOptions options_;
  std::atomic<bool> disabled_{false};
};

} // namespace popc::cache
