#include "distributed/mpi_session.h"

#include "runtime/engine.h"
#include "support/error.h"

#include <fmt/format.h>
#include <mpi.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <unistd.h>

namespace popc::distributed {

namespace {

// mpirun ends the other ranks with SIGTERM when one dies; say why before going.
char terminateMessage[256];
void onTerminate(int) {
  ssize_t ignored = ::write(STDERR_FILENO, terminateMessage, std::strlen(terminateMessage));
  (void)ignored;
  ::_exit(143);
}

int worldSizeFromEnvironment() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char *s = std::getenv(var))
      return std::atoi(s);
  return 0;
}

void check(int rc, const char *call, const char *what) {
  if (rc != MPI_SUCCESS)
    fail("MPI {} failed while {} (error {})", call, what, rc);
}

} // namespace

std::unique_ptr<MpiSession> MpiSession::join(const std::string &tool, const std::atomic<bool> *stop) {
  if (worldSizeFromEnvironment() < 2)
    return nullptr;
  return std::unique_ptr<MpiSession>(new MpiSession(tool, stop));
}

MpiSession::MpiSession(std::string tool, const std::atomic<bool> *stop) : tool_(std::move(tool)), stop_(stop) {
  int provided = 0;
  // Only the engine's control thread (this one) calls MPI.
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread", "starting");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Errors come back as codes (then a one-line popc::Error), not MPI's abort.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm host;
  if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &host) == MPI_SUCCESS) {
    MPI_Comm_size(host, &local_);
    MPI_Comm_free(&host);
  }
  fmt::format_to_n(terminateMessage, sizeof terminateMessage - 1,
                   "{}: error: {}: stopped by mpirun: another rank failed or was killed (mpirun's message names "
                   "it)\n",
                   tool_, where());
  std::signal(SIGTERM, onTerminate);
}

MpiSession::~MpiSession() { MPI_Finalize(); }

std::string MpiSession::where() const { return fmt::format("rank {} of {}", rank_, size_); }

void MpiSession::wait(void *request, const char *what) {
  MPI_Request &r = *static_cast<MPI_Request *>(request);
  // Poll with a growing sleep: a spinning rank would take the core another
  // rank on this machine needs (mpirun --oversubscribe).
  for (unsigned spins = 0;; ++spins) {
    int done = 0;
    check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test", what);
    if (done)
      return;
    if (stop_ && stop_->load(std::memory_order_relaxed))
      throw runtime::Stopped(fmt::format("{}: stopped while {} (waiting for the other ranks)", where(), what));
    if (spins < 64)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(spins < 1024 ? 20 : 500));
  }
}

void MpiSession::broadcast(std::span<uint8_t> bytes, int root, const char *what) {
  // MPI counts are ints: 2 GiB pieces (one empty call when there are no bytes, as every rank must join).
  size_t at = 0;
  do {
    const int n = int(std::min<size_t>(bytes.size() - at, INT32_MAX));
    MPI_Request r;
    check(MPI_Ibcast(bytes.data() + at, n, MPI_BYTE, root, MPI_COMM_WORLD, &r), "MPI_Ibcast", what);
    wait(&r, what);
    at += size_t(n);
  } while (at < bytes.size());
}

void MpiSession::scatter(const std::vector<std::vector<uint8_t>> &perRank, std::span<uint8_t> mine,
                         const char *what) {
  std::vector<int> counts(size_), displs(size_);
  std::vector<uint8_t> packed;
  if (rank_ == 0) {
    for (int r = 0; r < size_; ++r) {
      if (perRank[r].size() > INT32_MAX)
        fail("{}: {} bytes for rank {} while {}: more than MPI's 2 GiB per message", where(), perRank[r].size(),
             r, what);
      counts[r] = int(perRank[r].size());
      displs[r] = int(packed.size());
      packed.insert(packed.end(), perRank[r].begin(), perRank[r].end());
    }
  }
  MPI_Request r;
  check(MPI_Iscatterv(packed.data(), counts.data(), displs.data(), MPI_BYTE, mine.data(), int(mine.size()), MPI_BYTE,
                      0, MPI_COMM_WORLD, &r),
        "MPI_Iscatterv", what);
  wait(&r, what);
}

void MpiSession::gather(std::span<const uint8_t> mine, std::vector<std::vector<uint8_t>> &perRank,
                        const char *what) {
  std::vector<int> counts(size_), displs(size_);
  std::vector<uint8_t> packed;
  if (rank_ == 0) {
    size_t total = 0;
    for (int r = 0; r < size_; ++r) {
      counts[r] = int(perRank[r].size());
      displs[r] = int(total);
      total += perRank[r].size();
    }
    packed.resize(total);
  }
  MPI_Request r;
  check(MPI_Igatherv(mine.data(), int(mine.size()), MPI_BYTE, packed.data(), counts.data(), displs.data(), MPI_BYTE, 0,
                     MPI_COMM_WORLD, &r),
        "MPI_Igatherv", what);
  wait(&r, what);
  if (rank_ == 0)
    for (int k = 0; k < size_; ++k)
      std::copy_n(packed.begin() + displs[k], counts[k], perRank[k].begin());
}

void MpiSession::agree(const std::optional<std::string> &problem) {
  int mine = problem ? rank_ : size_, first = size_;
  MPI_Request r;
  check(MPI_Iallreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &r), "MPI_Iallreduce", "agreeing");
  wait(&r, "agreeing on errors");
  if (first == size_)
    return;
  uint64_t length = first == rank_ ? problem->size() : 0;
  broadcast({reinterpret_cast<uint8_t *>(&length), sizeof length}, first, "sending an error");
  std::string message(length, '\0');
  if (first == rank_)
    message = *problem;
  broadcast({reinterpret_cast<uint8_t *>(message.data()), message.size()}, first, "sending an error");
  if (first == rank_)
    fail("{}", message);
  fail("rank {} of {} reports: {}", first, size_, message);
}

void MpiSession::reportAgreedError(const std::string &message) {
  fmt::print(stderr, "{}: error: {}\n", tool_, message);
  std::fflush(stderr);
  terminateMessage[0] = '\0'; // said once; mpirun's SIGTERM now ends the rank quietly
  MPI_Request r;
  check(MPI_Ibarrier(MPI_COMM_WORLD, &r), "MPI_Ibarrier", "reporting an error");
  wait(&r, "reporting an error");
}

void MpiSession::abort(const std::string &message, int exitCode) {
  fmt::print(stderr, "{}: error: {}: {}\n", tool_, where(), message);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, exitCode);
  std::_Exit(exitCode);
}

} // namespace popc::distributed
