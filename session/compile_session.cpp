#include "session/compile_session.h"

#include "compiler/driver/cache_key.h"
#include "formats/popef/popef.h"
#include "support/log.h"

#include <chrono>

namespace popc::session {

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
} // namespace

CompileResult compileModel(const std::string &modelPath, const driver::CompileOptions &options,
                           const CacheSettings &cache, const std::optional<std::string> &outputFile,
                           const driver::CompileHooks *hooks) {
  auto log = log::get("session");
  CompileResult result;
  std::optional<driver::ExecutableKey> key;
  if (cache.store)
    key = driver::executableCacheKey(modelPath, options);
  if (key)
    result.key = key->key;
  // The cached executable, written to the output file or read; false if the
  // store does not have it.
  auto takeHit = [&](Clock::time_point t0, bool afterWait) {
    if (outputFile) {
      auto size = cache.store->getToFile("exe", key->key, *outputFile);
      if (!size)
        return false;
      result.size = *size;
    } else {
      auto blob = cache.store->get("exe", key->key);
      if (!blob)
        return false;
      result.bytes.assign(blob->bytes().begin(), blob->bytes().end());
      result.size = result.bytes.size();
    }
    result.cacheHit = true;
    result.waitedForOtherCompile = afterWait;
    result.seconds = secondsSince(t0);
    if (afterWait)
      log->info("cache hit {} ({}) after waiting {:.3f} s for another compile: {} bytes{}", key->key,
                cache.store->describe(), result.seconds, result.size, outputFile ? " to " + *outputFile : "");
    else
      log->info("cache hit {} ({}): {} bytes{} in {:.3f} s without compiling", key->key, cache.store->describe(),
                result.size, outputFile ? " to " + *outputFile : "", result.seconds);
    return true;
  };
  const bool useHits = cache.store && key && !cache.compileOnHit;
  if (useHits) {
    if (takeHit(Clock::now(), false))
      return result;
    log->info("cache miss {} ({})", key->key, cache.store->describe());
  }
  // Concurrent compiles of one key (CI jobs, MPI ranks) compile once: the
  // first takes the key's lock, the others wait for its entry and hit.
  std::unique_ptr<cache::ComputeLock> lock;
  if (useHits) {
    const auto t0 = Clock::now();
    bool waited = false;
    lock = cache.store->lockForCompute(
        "exe", key->key, std::chrono::milliseconds(int64_t(cache.lockTimeoutSeconds * 1000)), [&](long pid) {
          waited = true;
          log->info("another popc-onnx{} is compiling the same model; waiting for its cache entry",
                    pid ? fmt::format(" (pid {})", pid) : "");
        });
    if (waited && takeHit(t0, true))
      return result;
  }
  result.bytes = driver::compileOnnx(modelPath, options, &result.stats, hooks);
  result.size = result.bytes.size();
  if (outputFile)
    popef::writeFile(*outputFile, result.bytes);
  if (cache.store && key)
    cache.store->put("exe", key->key, result.bytes);
  return result;
}

} // namespace popc::session
