#include "session/object_cache.h"

#include "cache/hash.h"
#include "formats/popef/popef.h"
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

// Compressed popefs' schedules, decompressed (kind "sched"), keyed by the
// schedule's own hash and size: the same schedule in two files is one entry.
class StoreScheduleCache : public popef::ScheduleCache {
public:
  explicit StoreScheduleCache(std::shared_ptr<cache::Store> store) : store_(std::move(store)) {}
  std::optional<Mapped> find(uint64_t xxh64, uint64_t size) override {
    auto blob = store_->get("sched", key(xxh64, size));
    if (!blob)
      return std::nullopt;
    auto owner = std::make_shared<cache::Blob>(std::move(*blob));
    return Mapped{owner, owner->bytes(), owner->fileBacked()};
  }
  void store(uint64_t xxh64, std::span<const uint8_t> bytes) override {
    store_->put("sched", key(xxh64, bytes.size()), bytes);
  }

private:
  static std::string key(uint64_t xxh64, uint64_t size) {
    cache::Hasher h;
    h.field("schedule-xxh64", std::span(reinterpret_cast<const uint8_t *>(&xxh64), 8));
    h.field("schedule-bytes", std::span(reinterpret_cast<const uint8_t *>(&size), 8));
    return h.digest().hex();
  }
  std::shared_ptr<cache::Store> store_;
};

} // namespace

void useObjectCache(std::shared_ptr<cache::Store> store) {
  if (!store)
    return;
  runtime::setObjectCache(std::make_shared<StoreObjectCache>(store));
  popef::setScheduleCache(std::make_shared<StoreScheduleCache>(std::move(store)));
}

} // namespace popc::session
