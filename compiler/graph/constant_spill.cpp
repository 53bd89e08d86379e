#include "compiler/graph/constant_spill.h"

#include "support/allocator.h"
#include "support/file_io.h"
#include "support/log.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace popc::graph {

namespace {
constexpr const char *kStayInMemory = "they stay in memory (set TMPDIR to a writable directory on disk)";
} // namespace

std::unique_ptr<ConstantSpill> ConstantSpill::spill(DeviceGraph &g, const std::string &dir, uint64_t minBytes) {
  auto log = log::get("driver");
  auto align64 = [](uint64_t n) { return (n + 63) / 64 * 64; };
  std::vector<uint64_t> offsets(g.tensors().size(), 0);
  uint64_t size = 0, constantBytes = 0;
  for (TensorId id = 0; id < g.tensors().size(); ++id) {
    offsets[id] = size;
    size += align64(g.tensor(id).constData.size());
    constantBytes += g.tensor(id).constData.size();
  }
  if (constantBytes == 0 || constantBytes < minBytes)
    return nullptr;
  std::string path = dir + "/popc-constants.XXXXXX";
  UniqueFd fd(::mkstemp(path.data()));
  if (!fd.valid()) {
    log->warn("cannot create a temporary file in {} for the model's constants ({}): {}", dir, std::strerror(errno),
              kStayInMemory);
    return nullptr;
  }
  ::unlink(path.c_str()); // the file lives as long as it is open or mapped
  // Written whole before any byte leaves the heap: a full disk leaves the graph as it was.
  for (TensorId id = 0; id < g.tensors().size(); ++id) {
    const std::vector<uint8_t> &data = g.tensor(id).constData;
    if (data.empty())
      continue;
    if (::lseek(fd.get(), off_t(offsets[id]), SEEK_SET) < 0 || !writeAll(fd.get(), data.data(), data.size())) {
      log->warn("cannot write the model's constants to a temporary file in {} ({}): {}", dir, std::strerror(errno),
                kStayInMemory);
      return nullptr;
    }
  }
  void *p = ::ftruncate(fd.get(), off_t(size)) == 0 ? ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd.get(), 0)
                                                     : MAP_FAILED;
  if (p == MAP_FAILED) {
    log->warn("cannot map the model's constants from a temporary file in {} ({}): {}", dir, std::strerror(errno),
              kStayInMemory);
    return nullptr;
  }
  auto *base = static_cast<uint8_t *>(p);
  for (TensorId id = 0; id < g.tensors().size(); ++id) {
    DeviceTensor &t = g.tensor(id);
    if (t.constData.empty())
      continue;
    t.spilled = {base + offsets[id], t.constData.size()};
    std::vector<uint8_t>().swap(t.constData);
  }
  releaseFreedHeap();
  log->info("{:.0f} MB of constants moved to a temporary file in {} while the schedule is packed", size / 1e6, dir);
  return std::unique_ptr<ConstantSpill>(new ConstantSpill(base, size));
}

void ConstantSpill::drop(std::span<const uint8_t> bytes) {
  releaseWholePages(bytes.data(), bytes.data() + bytes.size());
}

ConstantSpill::~ConstantSpill() { ::munmap(base_, size_); }

} // namespace popc::graph
