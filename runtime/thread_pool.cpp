#include "runtime/thread_pool.h"

#include <immintrin.h>

namespace popc::runtime {

namespace {
// Supersteps follow each other quickly; spinning this long before sleeping
// saves a futex round trip per step without burning a core when idle.
constexpr int kSpinIterations = 1000;
} // namespace

unsigned defaultThreadCount() { return std::max(1u, std::thread::hardware_concurrency()); }

ThreadPool::ThreadPool(unsigned threads) {
  if (threads == 0)
    threads = defaultThreadCount();
  for (unsigned i = 1; i < threads; ++i)
    workers_.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto &t : workers_)
    t.join();
}

void ThreadPool::drain() {
  for (size_t i = next_.fetch_add(1, std::memory_order_relaxed); i < n_;
       i = next_.fetch_add(1, std::memory_order_relaxed))
    (*fn_)(i);
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen && spins++ < kSpinIterations)
      _mm_pause();
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    {
      std::lock_guard lock(mutex_);
      if (stop_)
        return;
    }
    drain();
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard lock(mutex_);
      done_.notify_one();
    }
  }
}

void ThreadPool::parallelFor(size_t n, const std::function<void(size_t)> &fn) {
  if (n == 0)
    return;
  if (workers_.empty() || n == 1) {
    for (size_t i = 0; i < n; ++i)
      fn(i);
    return;
  }
  {
    std::lock_guard lock(mutex_);
    fn_ = &fn;
    n_ = n;
    next_.store(0, std::memory_order_relaxed);
    pending_.store(static_cast<unsigned>(workers_.size()), std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  drain();
  int spins = 0;
  while (pending_.load(std::memory_order_acquire) != 0 && spins++ < kSpinIterations)
    _mm_pause();
  if (pending_.load(std::memory_order_acquire) != 0) {
    std::unique_lock lock(mutex_);
    done_.wait(lock, [&] { return pending_.load() == 0; });
  }
}

} // namespace popc::runtime
