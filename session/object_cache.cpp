#include "session/object_cache.h"

#include "runtime/object_cache.h"

namespace popc::session {

namespace {

class StoreObjectCache : public runtime::ObjectCache {
public:
  explicit StoreObjectCache(std::shared_ptr<cache::Store> store) : store_(std::move(store)) {}
  std::optional<std::vector<uint8_t>> load(const std::string &key) override {
    auto blob = store_->get("obj", key);
    if (!blob)
      return std::nullopt;
    return std::vector<uint8_t>(blob->bytes().begin(), blob->bytes().end());
  }
  void store(const std::string &key, std::span<const uint8_t> object) override { store_->put("obj", key, object); }

private:
  std::shared_ptr<cache::Store> store_;
};

} // namespace

void useObjectCache(std::shared_ptr<cache::Store> store) {
  if (store)
    runtime::setObjectCache(std::make_shared<StoreObjectCache>(std::move(store)));
}

} // namespace popc::session
