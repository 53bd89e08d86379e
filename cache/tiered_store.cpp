#include "cache/tiered_store.h"

#include "cache/remote_store.h"
#include "support/error.h"
#include "support/log.h"

namespace popc::cache {

Blob::Blob(std::vector<uint8_t> bytes) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  bytes_ = std::span<const uint8_t>(owned->data(), owned->size());
  owner_ = std::move(owned);
}

void checkKind(std::string_view kind) {
  bool ok = !kind.empty() && kind.size() <= 16;
  for (char c : kind)
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
  if (!ok)
    fail("cache kind '{}': must be 1-16 lowercase letters or digits", kind);
}

std::optional<uint64_t> Store::getToFile(std::string_view kind, std::string_view key, const std::string &path) {
  auto blob = get(kind, key);
  if (!blob)
    return std::nullopt;
  writeFileAtomic(path, blob->bytes());
  return blob->size();
}

std::unique_ptr<ComputeLock> Store::lockForCompute(std::string_view, std::string_view, std::chrono::milliseconds,
                                                  const std::function<void(long)> &) {
  return nullptr;
}

std::unique_ptr<ComputeLock> TieredStore::lockForCompute(std::string_view kind, std::string_view key,
                                                         std::chrono::milliseconds timeout,
                                                         const std::function<void(long pid)> &onWait) {
  return local_ ? local_->lockForCompute(kind, key, timeout, onWait) : nullptr;
}

std::vector<uint8_t> Store::getOrCompute(std::string_view kind, std::string_view key,
                                         const std::function<std::vector<uint8_t>()> &compute) {
  if (auto blob = get(kind, key))
    return {blob->bytes().begin(), blob->bytes().end()};
  auto lock = lockForCompute(kind, key, std::chrono::minutes(10), [](long) {});
  if (lock)
    if (auto blob = get(kind, key)) // computed by the process we waited for
      return {blob->bytes().begin(), blob->bytes().end()};
  std::vector<uint8_t> bytes = compute();
  put(kind, key, bytes);
  return bytes;
}

TieredStore::TieredStore(std::shared_ptr<LocalStore> local, std::shared_ptr<Store> remote)
    : local_(std::move(local)), remote_(std::move(remote)) {}

std::optional<Blob> TieredStore::get(std::string_view kind, std::string_view key) {
  if (local_)
    if (auto blob = local_->get(kind, key))
      return blob;
  if (!remote_)
    return std::nullopt;
  auto blob = remote_->get(kind, key);
  if (local_)
    local_->count(kind, blob ? "remote_hits" : "remote_misses");
  if (blob && local_)
    local_->put(kind, key, blob->bytes()); // next time it is local
  return blob;
}

void TieredStore::put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) {
  if (local_)
    local_->put(kind, key, payload);
  if (remote_)
    remote_->put(kind, key, payload);
}

std::optional<uint64_t> TieredStore::getToFile(std::string_view kind, std::string_view key,
                                               const std::string &path) {
  if (local_)
    if (auto size = local_->getToFile(kind, key, path))
      return size;
  if (!remote_)
    return std::nullopt;
  auto blob = remote_->get(kind, key);
  if (local_)
    local_->count(kind, blob ? "remote_hits" : "remote_misses");
  if (!blob)
    return std::nullopt;
  if (local_)
    local_->put(kind, key, blob->bytes());
  writeFileAtomic(path, blob->bytes());
  return blob->size();
}

std::string TieredStore::describe() const {
  std::string s;
  if (local_)
    s = local_->describe();
  if (remote_)
    s += (s.empty() ? "" : " + ") + remote_->describe();
  return s;
}

std::shared_ptr<Store> openStore(const StoreOptions &options) {
  std::shared_ptr<LocalStore> local;
  std::shared_ptr<Store> remote;
  if (!options.dir.empty()) {
    local = std::make_shared<LocalStore>(options.dir, options.maxSize);
    local->setLinkOutputs(options.linkOutputs);
    local->setTestPauses(options.testPauseMidWrite, options.testPauseBeforeRename);
  }
  if (!options.remoteUrl.empty())
    remote = std::make_shared<RemoteStore>(options.remoteUrl, options.remote);
  if (!local && !remote)
    return nullptr;
  if (local && !remote)
    return local;
  return std::make_shared<TieredStore>(std::move(local), std::move(remote));
}

} // namespace popc::cache
