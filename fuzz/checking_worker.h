// The fuzzers' version of support/child_guard.h: runs third-party parsing that
// is not hardened against crafted input (libonnx's checker and shape inference,
// LLVM's bitcode reader) in a separate process first, so its known crashes are
// refusals and the fuzzer keeps looking for popc's own bugs in the in-process
// run that follows. The tools fork one child per input (runInChild); forking an
// ASan-instrumented fuzzer costs about 9 ms, which caps a fuzzer at ~115
// inputs/s. This worker is spawned once and kept: each input travels over a
// socket, so the check costs a round trip. The worker is a zygote that forks
// the process that checks inputs, and forks a fresh one when that one dies
// (crash, sanitizer report, timeout) or after 4096 inputs (third-party leaks
// do not pile up). POPC_FUZZ_IN_PROCESS=1 turns the check off, to hunt those
// third-party crashes in-process.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace popc::fuzz {

// Per input in the worker: below run.sh's libFuzzer -timeout (25 s), so a
// library hang is a refusal, as the tools' longer child limits make it.
constexpr unsigned kCheckSeconds = 10;

class CheckingWorker {
public:
  // Checks `input`; what it leaves in `output` goes back to the fuzzer.
  using Work = std::function<void(std::span<const uint8_t> input, std::vector<uint8_t> &output)>;

  // Call from LLVMFuzzerInitialize: in a worker process this serves inputs
  // with `work` (returning or throwing popc::Error is a pass; each input gets
  // `secondsPerInput`) and never returns; in the fuzzer itself it returns.
  static void serveIfWorker(const Work &work, unsigned secondsPerInput);

  // The worker starts on the first input: a fresh exec of this executable.
  CheckingWorker();
  ~CheckingWorker();
  CheckingWorker(const CheckingWorker &) = delete;
  CheckingWorker &operator=(const CheckingWorker &) = delete;

  // True when `work` finished on `input` in the worker (or the check is off),
  // with its output in `*output` if given; false, saying so with
  // POPC_FUZZ_VERBOSE, when the worker died on it or did not finish in time.
  bool passes(std::span<const uint8_t> input, std::vector<uint8_t> *output = nullptr);

  // POPC_FUZZ_IN_PROCESS=1: no worker; passes() is always true, with no output.
  bool inProcess() const { return inProcess_; }

private:
  void start();
  void stop();

  bool inProcess_; // POPC_FUZZ_IN_PROCESS: no checking
  int socket_ = -1;
  int pid_ = -1;
};

} // namespace popc::fuzz
