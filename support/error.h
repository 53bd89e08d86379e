// popc::Error — the one exception type every layer throws for bad input or
// unsupported features. Tools catch it at main() and print a one-line message.
#pragma once
#include <fmt/format.h>
#include <stdexcept>
#include <string>

namespace popc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args &&...args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

// Internal invariant violated: a compiler bug, not a user error.
#define POPC_ASSERT(cond)                                                      \
  do {                                                                         \
    if (!(cond))                                                               \
      ::popc::fail("internal error: {} ({}:{})", #cond, __FILE__, __LINE__);   \
  } while (0)

} // namespace popc
