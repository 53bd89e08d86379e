// popc::Error — the one exception type every layer throws for bad input or
// unsupported features. Tools catch it at main() and print a one-line message.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace popc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message, std::string inputNeedingValue = {})
      : std::runtime_error(message), inputNeedingValue_(std::move(inputNeedingValue)) {}

  // Set when compilation stopped because an op needs the compile-time value
  // of this graph input (e.g. a Reshape's shape fed by the user): freezing
  // the input (--freeze-input) lets the model compile.
  const std::string &inputNeedingValue() const { return inputNeedingValue_; }

  // The same error with `prefix` (e.g. the file or op) in front of the message.
  [[noreturn]] void rethrowWithPrefix(const std::string &prefix) const {
    throw Error(prefix + what(), inputNeedingValue_);
  }

private:
  std::string inputNeedingValue_;
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args &&...args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// A violated internal invariant: a bug in popc, not bad input. Tools report
// it as an internal error (exit code 2), distinct from user errors (exit 1).
class InternalError : public std::logic_error {
public:
  explicit InternalError(const std::string &message) : std::logic_error(message) {}
};

#define POPC_ASSERT(cond)                                                      \
  do {                                                                         \
    if (!(cond))                                                               \
      throw ::popc::InternalError(                                             \
          ::fmt::format("internal error: {} ({}:{})", #cond, __FILE__, __LINE__)); \
  } while (0)

} // namespace popc
