// A fixed pool of host threads for bulk-synchronous steps: parallelFor hands
// out indices dynamically and returns when all are done (= the sync).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace popc::runtime {

// The host threads a run uses unless told otherwise: the hardware
// concurrency, at least 1.
unsigned defaultThreadCount();

class ThreadPool {
public:
  // `threads` counts the calling thread; 0 means the hardware concurrency.
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned size() const { return static_cast<unsigned>(workers_.size()) + 1; }
  // Calls fn(i) once for every i in [0, n), on any thread; the caller helps.
  // fn must not throw.
  void parallelFor(size_t n, const std::function<void(size_t)> &fn);

private:
  void workerLoop();
  void drain();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::atomic<uint64_t> generation_{0};
  std::atomic<size_t> next_{0};
  std::atomic<unsigned> pending_{0};
  const std::function<void(size_t)> *fn_ = nullptr;
  size_t n_ = 0;
  bool stop_ = false;
};

} // namespace popc::runtime
