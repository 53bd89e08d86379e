#include "support/version.h"
namespace popc {
const std::string &compilerVersion() {
  static const std::string v = std::string("popc ") + POPC_VERSION;
  return v;
}
} // namespace popc
