#include "support/parallel.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace popc {

void parallelFor(size_t n, const std::function<void(size_t)> &work) {
  const size_t threads = std::min<size_t>(n, std::max(1u, std::thread::hardware_concurrency()));
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
  for (size_t t = 1; t < threads; ++t)
    helpers.emplace_back(run);
  run();
  for (std::thread &h : helpers)
    h.join();
  if (failure)
    std::rethrow_exception(failure);
}

} // namespace popc
