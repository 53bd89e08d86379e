// Compile phase progress on a terminal: one stderr line rewritten in place,
// "popc-onnx: [2/5] passes (0.4 s)", cleared at the end. Silent when stderr
// is not a terminal or with --quiet, so logs and CI output stay clean.
#pragma once
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace popc::tools {

class PhaseProgress {
public:
  PhaseProgress(std::string tool, bool quiet) : tool_(std::move(tool)), enabled_(!quiet && isatty(2)) {}
  ~PhaseProgress() { done(); }
  bool enabled() const { return enabled_; }

  void phase(const char *name) {
    if (!enabled_)
      return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    fmt::print(stderr, "\r{}: [{}/5] {} ({:.1f} s)\033[K", tool_, ++count_, name, s);
    std::fflush(stderr);
    shown_ = true;
  }
  void done() {
    if (shown_)
      fmt::print(stderr, "\r\033[K");
    std::fflush(stderr);
    shown_ = false;
  }

private:
  std::string tool_;
  bool enabled_;
  bool shown_ = false;
  int count_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

} // namespace popc::tools
