// Local directory first, then the remote server, then the caller computes:
// remote hits are copied into the local store, results go to both.
#pragma once
#include "cache/local_store.h"
#include "cache/remote_store.h"
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

// How the tools open their store. The library reads no environment: the tools
// fill this from their flags and POPC_* variables (tools/cache_options.h).
struct StoreOptions {
  std::string dir;         // LocalStore here, if not empty
  uint64_t maxSize = kDefaultMaxSize;
  std::string remoteUrl;   // RemoteStore here, if not empty
  RemoteOptions remote;
  bool linkOutputs = true; // local hits written by getToFile() are hard links (false: copies)
  double testPauseMidWrite = 0, testPauseBeforeRename = 0; // LocalStore::setTestPauses
};

// The store the tools use: the local store, the remote one, or both tiered.
// Null when neither is asked for.
std::shared_ptr<Store> openStore(const StoreOptions &options);

} // namespace popc::cache
