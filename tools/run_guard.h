// Resource flags for untrusted input: --max-memory (popc-onnx, poprun-lite) and
// --timeout (poprun-lite), and the watchdog that enforces the timeout.
#pragma once
#include "cache/size.h"
#include "support/limits.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>

namespace popc::tools {

struct RunGuardOptions {
  std::string maxMemory = "16G";
  double timeoutSeconds = 0;

  void addMaxMemory(CLI::App &app, const std::string &what) {
    app.add_option("--max-memory", maxMemory,
                   what + ": bytes or K/M/G/T, 0 = no limit (default 16G; see docs/reliability.md)")
        ->envname("POPC_MAX_MEMORY");
  }
  void add(CLI::App &app) {
    addMaxMemory(app, "Refuse an executable or inputs whose declared sizes need more memory than this");
    app.add_option("--timeout", timeoutSeconds,
                   "Stop the run after this many seconds (checked between steps), exit code 3; 0 = none")
        ->check(CLI::Range(0.0, 1e9));
  }
  uint64_t maxMemoryBytes() const { return cache::parseSize(maxMemory, "--max-memory"); }
};

// Sets flag() when the timeout expires; if the run has not finished() within
// kTimeoutGraceSeconds more (a vertex or the JIT does not return), prints one
// line and exits the process with kExitTimeout.
class Watchdog {
public:
  Watchdog(std::string tool, double seconds) : tool_(std::move(tool)), seconds_(seconds) {
    if (seconds <= 0)
      return;
    thread_ = std::thread([this] {
      std::unique_lock lock(mutex_);
      auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds_);
      if (cv_.wait_until(lock, deadline, [this] { return done_; }))
        return;
      stop_.store(true);
      if (cv_.wait_for(lock, std::chrono::seconds(limits::kTimeoutGraceSeconds), [this] { return done_; }))
        return;
      std::string msg = fmt::format("{}: error: stopped by --timeout {} s: the current step (loading, JIT or a "
                                    "vertex) did not return within {} s more; no outputs written\n",
                                    tool_, seconds_, limits::kTimeoutGraceSeconds);
      (void)!::write(2, msg.data(), msg.size());
      ::_exit(limits::kExitTimeout);
    });
  }
  ~Watchdog() {
    finished();
    if (thread_.joinable())
      thread_.join();
  }
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  const std::atomic<bool> *flag() const { return seconds_ > 0 ? &stop_ : nullptr; }
  void finished() {
    std::lock_guard lock(mutex_);
    done_ = true;
    cv_.notify_all();
  }

private:
  std::string tool_;
  double seconds_;
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

} // namespace popc::tools
