// Opening popef executables: mmap, identifier, flatbuffers Verifier, then the
// semantic checks of verify.cpp. Nothing is handed out before all three pass.
#include "formats/popef/popef.h"
#include "formats/popef/compressed.h"

#include "support/allocator.h"
#include "support/error.h"
#include "support/file_io.h"
#include "support/log.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <future>
#include <mutex>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace popc::popef {

void verifySemantics(const ::popef::fb::Executable &exe, const Segment &segment, const std::string &label,
                     unsigned threads); // verify.cpp

namespace {

// Verifier limits: deep enough for any program tree the checks accept
// (kMaxProgramDepth), bounded so a hostile file cannot exhaust the stack.
constexpr flatbuffers::uoffset_t kVerifierMaxDepth = 256;
constexpr flatbuffers::uoffset_t kVerifierMaxTables = 1u << 26;
// From this size on the file's checksum is computed beside the other checks.
constexpr size_t kHashBesideBytes = 16u << 20;

} // namespace

Executable::~Executable() {
  if (storing_.valid())
    storing_.wait(); // it reads the schedule
  if (mapping_)
    ::munmap(mapping_, size_);
  if (decompressed_)
    ::munmap(decompressed_, decompressedSize_);
}

namespace {

// Set by sessions on any thread while others open files.
std::mutex scheduleCacheMutex;
std::shared_ptr<ScheduleCache> scheduleCacheSlot;

std::shared_ptr<ScheduleCache> scheduleCache() {
  std::lock_guard lock(scheduleCacheMutex);
  return scheduleCacheSlot;
}

// Drops the whole pages of `bytes`, if it lies inside the mapping `within`.
void dropPages(std::span<const uint8_t> bytes, std::span<const uint8_t> within) {
  if (!bytes.empty() && bytes.data() >= within.data() && bytes.data() + bytes.size() <= within.data() + within.size())
    releaseWholePages(bytes.data(), bytes.data() + bytes.size());
}

} // namespace

void setScheduleCache(std::shared_ptr<ScheduleCache> cache) {
  std::lock_guard lock(scheduleCacheMutex);
  scheduleCacheSlot = std::move(cache);
}

void Executable::releaseMappedPages() const {
  if (mapping_)
    ::madvise(mapping_, size_, MADV_DONTNEED);
  if (cached_.fileBacked)
    releaseMappedPages(cached_.bytes);
}

void Executable::releaseMappedPages(std::span<const uint8_t> bytes) const {
  if (mapping_)
    dropPages(bytes, {data_, size_});
  if (cached_.fileBacked)
    dropPages(bytes, cached_.bytes);
}

std::shared_ptr<const Executable> Executable::open(const std::string &path, unsigned threads, uint64_t memoryBudget) {
  UniqueFd f(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (f.get() < 0)
    fail("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st {};
  if (::fstat(f.get(), &st) != 0)
    fail("{}: cannot stat: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    fail("{}: not a regular file", path);
  auto exe = std::shared_ptr<Executable>(new Executable());
  exe->label_ = path;
  exe->size_ = static_cast<size_t>(st.st_size);
  if (exe->size_ < 8)
    fail("{}: not a popef file", path);
  void *p = ::mmap(nullptr, exe->size_, PROT_READ, MAP_PRIVATE, f.get(), 0);
  if (p == MAP_FAILED)
    fail("{}: cannot map file: {}", path, std::strerror(errno));
  exe->mapping_ = p;
  exe->data_ = static_cast<const uint8_t *>(p);
  exe->verify(threads, memoryBudget);
  return exe;
}

std::shared_ptr<const Executable> Executable::fromBytes(std::vector<uint8_t> bytes,
                                                        const std::string &label) {
  auto exe = std::shared_ptr<Executable>(new Executable());
  exe->label_ = label;
  exe->owned_ = std::move(bytes);
  exe->data_ = exe->owned_.data();
  exe->size_ = exe->owned_.size();
  exe->verify(1);
  return exe;
}

std::span<const uint8_t> Executable::constant(uint32_t i) const {
  return constantBytes(*root_->constants()->Get(i), segment_);
}

void Executable::verify(unsigned threads, uint64_t memoryBudget) {
  if (size_ < 8 + kTrailerBytes ||
      !(::popef::fb::ExecutableBufferHasIdentifier(data_) || isCompressed({data_, size_})))
    fail("{}: not a popef file", label_);
  auto checksumFailure = [this] {
    fail("{}: checksum mismatch: the file is truncated or corrupt; recompile the model", label_);
  };
  // Hashing the whole file is one long serial pass: on a large file it runs
  // on a thread of its own beside the structural checks (which are safe on
  // any bytes), and a mismatch is still the error reported, before theirs.
  const bool hashBeside = threads > 1 && size_ >= kHashBesideBytes;
  std::future<bool> trailer;
  if (hashBeside)
    trailer = std::async(std::launch::async, [this] { return hasValidTrailer(data_, size_); });
  else if (!hasValidTrailer(data_, size_))
    checksumFailure();
  std::exception_ptr structural;
  try {
    contentSize_ = size_ - kTrailerBytes;
    const std::span<const uint8_t> content(data_, contentSize_);
    if (isCompressed(content)) {
      decompress(content, threads, memoryBudget);
    } else {
      // The flatbuffer lies in the first 2 GiB; a data segment of weights may
      // follow it, to any size (format 4). Its ranges are checked semantically.
      schedule_ = content.first(std::min<uint64_t>(contentSize_, kMaxScheduleBytes));
      segment_ = {0, content};
    }
    verifyFlatbuffer();
    root_ = ::popef::fb::GetExecutable(schedule_.data());
    verifySemantics(*root_, segment_, label_, threads);
  } catch (...) {
    structural = std::current_exception();
  }
  if (hashBeside && !trailer.get())
    checksumFailure();
  if (structural)
    std::rethrow_exception(structural);
  // Kept for the next start only once the whole file is known to be valid;
  // written beside what follows the open (an entry is fsync'd: ~0.1 s).
  if (decompressed_)
    if (std::shared_ptr<ScheduleCache> cache = scheduleCache())
      try {
        storing_ = std::async(std::launch::async, [cache = std::move(cache), key = scheduleKey_,
                                                   schedule = schedule_] { cache->store(key, schedule); });
      } catch (const std::exception &e) { // no thread: the next start decompresses again
        log::get("popef")->warn("{}: not keeping the decompressed schedule: {}", label_, e.what());
      }
}

void Executable::verifyFlatbuffer() const {
  flatbuffers::Verifier verifier(schedule_.data(), schedule_.size(), kVerifierMaxDepth, kVerifierMaxTables);
  if (!::popef::fb::ExecutableBufferHasIdentifier(schedule_.data()) || !::popef::fb::VerifyExecutableBuffer(verifier))
    fail("{}: corrupt popef file (flatbuffer verification failed): recompile the model", label_);
}

void Executable::decompress(std::span<const uint8_t> content, unsigned threads, uint64_t memoryBudget) {
  const CompressedLayout layout = readCompressedLayout(content, label_);
  segment_ = layout.segment;
  uint64_t fileXxh64 = 0;
  std::memcpy(&fileXxh64, data_ + size_ - 8, 8); // the trailer's (checked beside)
  scheduleKey_ = {layout.scheduleXxh64, layout.scheduleBytes, fileXxh64};
  if (const std::shared_ptr<ScheduleCache> cache = scheduleCache()) {
    std::optional<ScheduleCache::Mapped> hit = cache->find(scheduleKey_);
    if (hit && hit->bytes.size() == layout.scheduleBytes && checksum(hit->bytes) == layout.scheduleXxh64) {
      cached_ = std::move(*hit);
      schedule_ = cached_.bytes;
      log::get("popef")->debug("{}: schedule ({} bytes) from the cache", label_, schedule_.size());
      return;
    }
    log::get("popef")->debug("{}: schedule ({} bytes) {} the cache: decompressing it", label_,
                             layout.scheduleBytes, hit ? "corrupt in" : "not in");
  }
  if (memoryBudget && layout.scheduleBytes > memoryBudget)
    fail("{}: its schedule needs {:.2f} GiB once decompressed, more than --max-memory {:.2f} GiB: raise "
         "--max-memory (or POPC_MAX_MEMORY) if the file is trusted",
         label_, layout.scheduleBytes / double(1ull << 30), memoryBudget / double(1ull << 30));
  // Its own mapping: pages are only touched as the frame fills them, and the
  // schedule is read-only once it is in.
  void *p = ::mmap(nullptr, layout.scheduleBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    fail("{}: cannot allocate {} bytes for the schedule: {}", label_, layout.scheduleBytes, std::strerror(errno));
  decompressed_ = p;
  decompressedSize_ = layout.scheduleBytes;
  decompressSchedule(layout, content, static_cast<uint8_t *>(p), label_);
  schedule_ = {static_cast<const uint8_t *>(p), layout.scheduleBytes};
  // The filter's vectors are found through the verified tables; undoing it
  // rewrites them, so verify() checks the buffer again (a hostile vector laid
  // over a table would otherwise slip through).
  verifyFlatbuffer();
  unfilterSchedule(layout, static_cast<uint8_t *>(p), std::max(1u, threads), label_);
  ::mprotect(p, layout.scheduleBytes, PROT_READ);
}

} // namespace popc::popef
