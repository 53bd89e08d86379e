// One poprun-lite instance among several started by mpirun (docs/distributed.md).
// Every wait on another rank polls, so the engine's stop flag (--timeout) ends
// it: a hung or dead peer never hangs this rank. MPI is initialised only when
// the process was launched by mpirun with more than one rank; otherwise
// join() returns null and nothing here runs.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace popc::distributed {

class MpiSession {
public:
  // This process's session, or null when not started by mpirun with 2+ ranks
  // (OMPI_COMM_WORLD_SIZE / PMI_SIZE). `tool` prefixes messages; `stop` ends
  // every wait (runtime::Stopped).
  static std::unique_ptr<MpiSession> join(const std::string &tool, const std::atomic<bool> *stop);
  ~MpiSession(); // MPI_Finalize
  MpiSession(const MpiSession &) = delete;
  MpiSession &operator=(const MpiSession &) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Ranks on this machine (MPI_COMM_TYPE_SHARED): they share its cores.
  int ranksOnThisHost() const { return local_; }
  // "rank 1 of 4" for messages.
  std::string where() const;

  // Collective: `bytes` of rank `root` reach every rank (same size everywhere).
  void broadcast(std::span<uint8_t> bytes, int root, const char *what);
  // Collective: rank r receives perRank[r] (used on rank 0 only) into `mine`,
  // whose size each rank knows.
  void scatter(const std::vector<std::vector<uint8_t>> &perRank, std::span<uint8_t> mine, const char *what);
  // Collective: rank 0 receives each rank's `mine` into perRank[r], sized by the caller.
  void gather(std::span<const uint8_t> mine, std::vector<std::vector<uint8_t>> &perRank, const char *what);
  // Collective: if any rank has a problem, every rank throws popc::Error with
  // the first failing rank's message (prefixed by its rank when it is another).
  void agree(const std::optional<std::string> &problem);
  // Collective, once agree() has failed on every rank: prints "<tool>: error:
  // <message>" (the line a tool prints for any error), then waits until every
  // rank has printed its own. Otherwise the first rank to exit makes mpirun
  // stop the others before they say why. A SIGTERM after this ends the rank
  // silently.
  void reportAgreedError(const std::string &message);
  // Ends every rank (MPI_Abort) with `exitCode`, after printing `message`.
  [[noreturn]] void abort(const std::string &message, int exitCode);

private:
  MpiSession(std::string tool, const std::atomic<bool> *stop);
  void wait(void *request, const char *what);

  std::string tool_;
  const std::atomic<bool> *stop_;
  int rank_ = 0, size_ = 1, local_ = 1;
};

} // namespace popc::distributed
