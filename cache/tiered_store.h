// Local directory first, then the remote server, then the caller computes:
// remote hits are copied into the local store, results go to both.
#pragma once
#include "cache/local_store.h"
#include "cache/store.h"

#include <memory>

namespace popc::cache {

class TieredStore : public Store {
public:
  // Either may be null (no local directory / no remote).
  TieredStore(std::shared_ptr<LocalStore> local, std::shared_ptr<Store> remote);
  std::optional<Blob> get(std::string_view kind, std::string_view key) override;
  void put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) override;
  std::string describe() const override;
  std::optional<uint64_t> getToFile(std::string_view kind, std::string_view key, const std::string &path) override;
  std::unique_ptr<ComputeLock> lockForCompute(std::string_view kind, std::string_view key,
                                              std::chrono::milliseconds timeout,
                                              const std::function<void(long pid)> &onWait) override;

private:
  std::shared_ptr<LocalStore> local_;
  std::shared_ptr<Store> remote_;
};

// The store the tools use: LocalStore at `dir` (if not empty) with `maxSize`,
// RemoteStore at `remoteUrl` (if not empty). Null when both are empty.
// linkOutputs: local hits written by getToFile() are hard links (false: copies).
std::shared_ptr<Store> openStore(const std::string &dir, uint64_t maxSize, const std::string &remoteUrl,
                                 bool linkOutputs = true);

} // namespace popc::cache
