#include "cache/size.h"

#include "support/error.h"

#include <cctype>
#include <charconv>

namespace popc::cache {

uint64_t parseSize(const std::string &text, const std::string &what) {
  auto bad = [&] {
    fail("{} '{}': expected a size in bytes with an optional K, M, G or T suffix (binary units), "
         "e.g. 5G or 500M",
         what, text);
  };
  double value = 0;
  const char *begin = text.data(), *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr == begin || value < 0)
    bad();
  std::string suffix(ptr, end);
  for (char &c : suffix)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.ends_with("IB"))
    suffix.erase(suffix.size() - 2);
  else if (suffix.ends_with("B"))
    suffix.pop_back();
  double scale = 1;
  if (suffix == "K")
    scale = 1024.0;
  else if (suffix == "M")
    scale = 1024.0 * 1024;
  else if (suffix == "G")
    scale = 1024.0 * 1024 * 1024;
  else if (suffix == "T")
    scale = 1024.0 * 1024 * 1024 * 1024;
  else if (!suffix.empty())
    bad();
  double bytes = value * scale;
  if (bytes > 1.8e19)
    bad();
  return static_cast<uint64_t>(bytes);
}

std::string formatSize(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = double(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, units[u]);
}

} // namespace popc::cache
