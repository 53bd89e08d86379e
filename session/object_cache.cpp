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
// schedule's hash and size and the file's hash.
class StoreScheduleCache : public popef::ScheduleCache {
public:
  explicit StoreScheduleCache(std::shared_ptr<cache::Store> store) : store_(std::move(store)) {}
  std::optional<Mapped> find(const Key &key) override {
    auto blob = store_->get("sched", hex(key));
    if (!blob)
      return std::nullopt;
    auto owner = std::make_shared<cache::Blob>(std::move(*blob));
    return Mapped{owner, owner->bytes(), owner->fileBacked()};
  }
  void store(const Key &key, std::span<const uint8_t> bytes) override { store_->put("sched", hex(key), bytes); }

private:
  static std::string hex(const Key &key) {
    cache::Hasher h;
    auto field = [&h](const char *name, uint64_t v) {
      h.field(name, std::span(reinterpret_cast<const uint8_t *>(&v), 8));
    };
    field("schedule-xxh64", key.scheduleXxh64);
    field("schedule-bytes", key.scheduleBytes);
    field("file-xxh64", key.fileXxh64);
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
