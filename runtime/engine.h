// Engine: loads a verified popef onto the simulated target, JIT-compiles its
// vertex code and runs its `main` program bulk-synchronously. It executes
// programs, exchanges and vertices only; all arithmetic is the executable's.
#pragma once
#include "formats/popef/popef.h"
#include "runtime/ipu_link.h"
#include "runtime/program_observer.h"
#include "runtime/replica_link.h"
#include "runtime/report.h"
#include "support/dtype.h"
#include "support/error.h"

#include <atomic>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace popc::runtime {

struct EngineOptions {
  unsigned threads = 0;             // host threads incl. the caller; 0 = hardware concurrency
  std::shared_ptr<IpuLink> ipuLink; // null = all IPUs in this process
  // Null = all replicas in this process. Else this engine holds the link's
  // slice of the replicas (MPI instances, docs/distributed.md): run() takes
  // and returns whole host arrays but reads and writes only its replicas'
  // chunks (IoDesc::chunkBytes; replicaChunks() lists them).
  std::shared_ptr<ReplicaLink> replicaLink = nullptr;
  ProgramObserver *observer = nullptr; // profiling hook (program trace); null = off
  // Checked between steps (each Execute, Exchange, StreamCopy, Sync and Repeat
  // iteration): once true, run() throws Stopped. Null = never stop.
  const std::atomic<bool> *stop = nullptr;
  // Verify, plan memory and build the step tables, but neither gate nor JIT the
  // code (vertex functions stay null): for fuzzing the loader. run() refuses.
  bool skipJit = false;
  // Parse and gate the code modules in a forked child first (runtime/bitcode_probe.h),
  // before this engine starts any thread: LLVM's reader crashes on some crafted
  // bitcode. Off only for code this process generated itself (the graph API).
  bool probeCodeInChild = true;
  // Act on the executable's run-time checks (popef Check: e.g. Gather's index
  // bound): a failed one stops the run with its message. Off: the run goes on.
  bool runChecks = true;
};

// Thrown by Engine::run when EngineOptions::stop was set (poprun-lite --timeout).
class Stopped : public Error {
public:
  using Error::Error;
};

// Host-side tensor: raw little-endian bytes, row-major.
struct HostTensor {
  DType dtype = DType::F32;
  Shape shape;
  std::vector<uint8_t> data;
};
using HostTensorMap = std::map<std::string, HostTensor>;

// One model input or output (popef metadata IoInfo).
struct IoDesc {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t bytes = 0;
  uint64_t chunkBytes = 0; // one replica's one execution of the stream (the device tensor)
};

// Byte ranges [offset, offset + bytes) of a host array of `hostBytes` (chunks
// of `chunkBytes`, one per execution and replica, replicas minor) that
// replicas [first, first + count) of `replicas` read or write. A host array
// that is not a whole number of chunks per replica is shared by all
// replicas: one range, all of it.
struct ByteRange {
  uint64_t offset = 0, bytes = 0;
};
std::vector<ByteRange> replicaChunks(uint64_t hostBytes, uint64_t chunkBytes, uint32_t replicas, uint32_t first,
                                     uint32_t count);

class Engine {
public:
  // Runs the bitcode gate, JIT-compiles every entry point, reserves tile
  // memory and loads constants. Throws popc::Error.
  explicit Engine(std::shared_ptr<const popef::Executable> executable, EngineOptions options = {});
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  const std::vector<IoDesc> &inputs() const;
  const std::vector<IoDesc> &outputs() const;
  // Device variables (a training step's weights and optimizer state), which
  // keep their values across runs. Reading takes replica 0's copy; writing
  // sets every replica's. Errors name the variable and what it expects.
  const std::vector<IoDesc> &variables() const;
  HostTensor readVariable(const std::string &name);
  void writeVariable(const std::string &name, const HostTensor &value);
  // "a float32 [1,4], b int64 [2]" — what run() expects.
  std::string describeInputs() const;
  // The check run() makes first: throws popc::Error listing every mismatch.
  void checkInputs(const HostTensorMap &inputs) const;

  // Runs `main` once. `inputs` must hold exactly the model inputs with the
  // right dtype and shape (else popc::Error listing what is expected).
  // Returns every model output. Device memory persists between runs.
  HostTensorMap run(const HostTensorMap &inputs);

  const Report &report() const;
  void resetReport(); // clears cycles/time/run counters; keeps load and JIT times

  const popef::Executable &executable() const;

  // --- In-process use by the graph API (api/) ----------------------------
  // Runs child `index` of `main` (the graph API writes main as a Sequence of
  // the user's programs). Streams use the callbacks given to connectStream.
  void runProgram(uint32_t index);
  uint32_t numPrograms() const;
  // Called at each StreamCopy of the named stream: host-to-device fills
  // `bytes` bytes before they are copied in; device-to-host receives them.
  using StreamCallback = std::function<void(void *data, uint64_t bytes)>;
  void connectStream(const std::string &stream, StreamCallback callback);
  // Host access to a tensor (index into the executable's tensors), all bytes.
  void writeTensor(uint32_t tensor, const void *data, uint64_t bytes);
  void readTensor(uint32_t tensor, void *data, uint64_t bytes);
  // Where PrintTensor programs write (default: stdout).
  void setPrintHandler(std::function<void(const std::string &)> handler);

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace popc::runtime
