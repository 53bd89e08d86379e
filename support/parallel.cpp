#include "support/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace popc {

void parallelFor(size_t n, const std::function<void(size_t)> &work, unsigned threads) {
  if (threads == 0)
    threads = std::max(1u, std::thread::hardware_concurrency());
  const size_t used = std::min<size_t>(n, threads);
  std::atomic<size_t> next{0};
  std::mutex failureMutex;
  size_t failedAt = n;
  std::exception_ptr failure;
  auto run = [&] {
    for (size_t i = next++; i < n; i = next++) {
      try {
        work(i);
      } catch (...) {
        std::lock_guard lock(failureMutex);
        if (i < failedAt)
          failedAt = i, failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < used; ++t)
    helpers.emplace_back(run);
  run();
  for (std::thread &h : helpers)
    h.join();
  if (failure)
    std::rethrow_exception(failure);
}

} // namespace popc
