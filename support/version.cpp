#include "support/version.h"

#include <xxhash.h>

#include <elf.h>
#include <fmt/format.h>
#include <link.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <string_view>
#include <vector>

namespace popc {

const std::string &compilerVersion() {
  static const std::string v = std::string("popc ") + POPC_VERSION;
  return v;
}

namespace {

// Libraries (besides the executable) whose code shapes popc's output.
bool relevantLibrary(std::string_view path) {
  for (std::string_view name : {"libLLVM", "libonnx", "libprotobuf"})
    if (path.find(name) != std::string_view::npos)
      return true;
  return false;
}

std::string buildIdNote(const dl_phdr_info *info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE)
      continue;
    const char *p = reinterpret_cast<const char *>(info->dlpi_addr + ph.p_vaddr);
    const char *end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      ElfW(Nhdr) nh;
      std::memcpy(&nh, p, sizeof nh);
      const char *name = p + sizeof nh;
      const char *desc = name + ((nh.n_namesz + 3) & ~3u);
      if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0 &&
          desc + nh.n_descsz <= end) {
        std::string hex;
        for (unsigned j = 0; j < nh.n_descsz; ++j)
          hex += fmt::format("{:02x}", static_cast<unsigned char>(desc[j]));
        return hex;
      }
      p = desc + ((nh.n_descsz + 3) & ~3u);
    }
  }
  return {};
}

std::string fileHash(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return fmt::format("xxh64-{:016x}", XXH64(bytes.data(), bytes.size(), 0));
}

// Whether `info`'s object holds this function: popc's own code, linked into
// the tools' executables or into libpopc.so for the session and graph APIs.
bool holdsPopc(const dl_phdr_info *info) {
  const auto self = reinterpret_cast<ElfW(Addr)>(&buildId);
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && self >= info->dlpi_addr + ph.p_vaddr &&
        self < info->dlpi_addr + ph.p_vaddr + ph.p_memsz)
      return true;
  }
  return false;
}

int collect(dl_phdr_info *info, size_t, void *data) {
  auto &out = *static_cast<std::string *>(data);
  std::string_view path = info->dlpi_name ? info->dlpi_name : "";
  bool exe = path.empty(); // the first object (the executable) has no name
  // The object with popc's code, whichever it is (a program using libpopc.so
  // keys by the library, not by itself), and the libraries shaping its output.
  const bool ours = holdsPopc(info);
  if (!ours && !relevantLibrary(path))
    return 0;
  std::string id = buildIdNote(info);
  if (id.empty())
    id = fileHash(exe ? "/proc/self/exe" : std::string(path));
  std::string_view base = exe ? "exe" : path.substr(path.rfind('/') + 1);
  out += fmt::format("{}{}:{}", out.empty() ? "" : " ", base, id);
  return 0;
}

} // namespace

const std::string &buildId() {
  static const std::string id = [] {
    std::string s;
    dl_iterate_phdr(collect, &s);
    return s;
  }();
  return id;
}

} // namespace popc
