#include "runtime/code_pages.h"

#include <llvm-c/Core.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <sys/mman.h>

namespace popc::runtime {

namespace {

// A debugger's software breakpoints are written into private copies of the
// text pages; dropping those would silently remove them.
bool beingTraced() {
  FILE *status = std::fopen("/proc/self/status", "r");
  if (!status)
    return true; // cannot tell: leave the pages alone
  char line[256];
  long tracer = 0;
  while (std::fgets(line, sizeof line, status))
    if (std::sscanf(line, "TracerPid: %ld", &tracer) == 1)
      break;
  std::fclose(status);
  return tracer != 0;
}

} // namespace

void releaseLlvmCodePages() {
  if (beingTraced())
    return;
  // The shared object that holds LLVM's code (none when LLVM is linked
  // statically into this executable: its code is this program's own then).
  Dl_info info{};
  if (!::dladdr(reinterpret_cast<void *>(&LLVMContextCreate), &info) || !info.dli_fname)
    return;
  char *library = ::realpath(info.dli_fname, nullptr);
  char *self = ::realpath("/proc/self/exe", nullptr);
  const bool shared = library && (!self || std::strcmp(library, self) != 0);
  std::free(self);
  if (!shared) {
    std::free(library);
    return;
  }
  // Only read-execute private mappings: text is never written, so dropping
  // its pages loses nothing (a relocated read-only segment would lose its
  // relocations, so r--p is left alone).
  if (FILE *maps = std::fopen("/proc/self/maps", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, maps)) {
      unsigned long begin = 0, end = 0;
      char perms[5] = {};
      int pathAt = 0;
      if (std::sscanf(line, "%lx-%lx %4s %*s %*s %*s %n", &begin, &end, perms, &pathAt) < 3 || pathAt <= 0)
        continue;
      std::string path(line + pathAt);
      while (!path.empty() && (path.back() == '\n' || path.back() == ' '))
        path.pop_back();
      if (std::strcmp(perms, "r-xp") == 0 && path == library)
        ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
    }
    std::fclose(maps);
  }
  std::free(library);
}

} // namespace popc::runtime
