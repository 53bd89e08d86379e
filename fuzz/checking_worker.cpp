#include "fuzz/checking_worker.h"

#include "fuzz/fuzz_util.h"
#include "support/error.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <string>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace popc::fuzz {

namespace {

// The worker is this same executable, started again with this variable naming
// its end of the socket; LLVMFuzzerInitialize sees it before libFuzzer installs
// its signal handlers, malloc hooks and crash-artifact writer, so a worker that
// dies leaves no artifact and is not a finding.
constexpr const char *kWorkerFdVariable = "POPC_FUZZ_WORKER_FD";

// Moves exactly `size` bytes with `io` (one read or send call), retrying on
// EINTR; false on end of file or an error (the other side is gone).
template <typename Io> bool transferAll(Io io, char *p, size_t size) {
  while (size) {
    ssize_t n = io(p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool readAll(int fd, void *data, size_t size) {
  return transferAll([fd](char *p, size_t n) { return ::read(fd, p, n); }, static_cast<char *>(data), size);
}

bool sendAll(int fd, const void *data, size_t size) {
  // MSG_NOSIGNAL: a dead worker is a false return, not SIGPIPE.
  return transferAll([fd](char *p, size_t n) { return ::send(fd, p, n, MSG_NOSIGNAL); },
                     const_cast<char *>(static_cast<const char *>(data)), size);
}

[[noreturn]] void die(const char *what) {
  std::fprintf(stderr, "fuzz checking worker: %s: %s\n", what, std::strerror(errno));
  std::abort();
}

// A worker environment: this process's, plus the socket and sanitizer options
// for a process whose reports nobody reads.
std::vector<std::string> workerEnvironment(int fd) {
  std::vector<std::string> env;
  auto isReplaced = [](const char *entry) {
    for (const char *name : {"ASAN_OPTIONS=", "UBSAN_OPTIONS=", kWorkerFdVariable})
      if (std::strncmp(entry, name, std::strlen(name)) == 0)
        return true;
    return false;
  };
  for (char **e = environ; *e; ++e)
    if (!isReplaced(*e))
      env.emplace_back(*e);
  env.push_back(std::string(kWorkerFdVariable) + "=" + std::to_string(fd));
  auto withOptions = [](const char *name, const char *extra) {
    const char *current = std::getenv(name);
    return std::string(name) + "=" + (current ? std::string(current) + ":" : "") + extra;
  };
  // Third-party leaks in the worker are expected and not reported; a forged
  // size that makes a library allocate gigabytes kills the worker (as libFuzzer's
  // -malloc_limit_mb would the fuzzer) instead of swapping for minutes; and a
  // dying worker does not start llvm-symbolizer for a report nobody reads.
  env.push_back(withOptions("ASAN_OPTIONS", "detect_leaks=0:allocator_may_return_null=0:"
                                            "max_allocation_size_mb=2048:symbolize=0:detect_stack_use_after_return=0"));
  env.push_back(withOptions("UBSAN_OPTIONS", "symbolize=0:print_stacktrace=0"));
  return env;
}

// A server's exit code after kServeEvery inputs (not a crash: ASan exits 1,
// the out-of-memory exit is 5), and the answer for an input it died on.
constexpr int kServedEnough = 97;
constexpr unsigned kServeEvery = 4096;
constexpr char kDone = 'D', kDied = 'X';

// Checks inputs from `fd` until end of input (exit 0) or kServeEvery inputs.
[[noreturn]] void serveInputs(int fd, const CheckingWorker::Work &work, unsigned secondsPerInput) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::vector<uint8_t> input, output;
  for (unsigned served = 0; served < kServeEvery; ++served) {
    uint64_t size;
    if (!readAll(fd, &size, sizeof size))
      ::_exit(0);
    input.resize(size);
    if (!readAll(fd, input.data(), size))
      ::_exit(0);
    output.clear();
    ::alarm(secondsPerInput);
    try {
      work(input, output);
    } catch (const Error &) {
      // a clean refusal: the fuzzer's in-process run sees it too
    }
    ::alarm(0);
    const uint64_t outputSize = output.size();
    if (!sendAll(fd, &kDone, 1) || !sendAll(fd, &outputSize, sizeof outputSize) ||
        !sendAll(fd, output.data(), output.size()))
      ::_exit(0);
  }
  ::_exit(kServedEnough); // skip leak checking: third-party leaks are not what this looks for
}

} // namespace

void CheckingWorker::serveIfWorker(const Work &work, unsigned secondsPerInput) {
  const char *fdText = std::getenv(kWorkerFdVariable);
  if (!fdText)
    return;
  const int fd = std::atoi(fdText);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!std::getenv("POPC_FUZZ_VERBOSE"))
    if (int null = ::open("/dev/null", O_WRONLY); null >= 0) {
      ::dup2(null, STDOUT_FILENO); // library messages on malformed input
      ::dup2(null, STDERR_FILENO); // and sanitizer reports of third-party bugs
    }
  const char ready = 'R';
  if (!sendAll(fd, &ready, 1))
    ::_exit(0);
  // This process is a zygote: it never checks an input itself. It forks a
  // server that does, and when that server dies on an input it answers kDied
  // for it and forks the next one: about 1 ms, where starting a fresh worker
  // (exec, ASan and libLLVM start-up) costs ~30 ms, and LLVM's bitcode reader
  // dies on a few percent of mutated inputs. Every server starts from the same
  // pristine state, as poprun-lite's forked child does.
  for (;;) {
    const pid_t server = ::fork();
    if (server < 0)
      ::_exit(1);
    if (server == 0)
      serveInputs(fd, work, secondsPerInput);
    int status = 0;
    while (::waitpid(server, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      ::_exit(0); // end of input: the fuzzer closed its end
    if (WIFEXITED(status) && WEXITSTATUS(status) == kServedEnough)
      continue; // a fresh server for the next input, so third-party leaks do not pile up
    if (!sendAll(fd, &kDied, 1))
      ::_exit(0);
  }
}

CheckingWorker::CheckingWorker() : inProcess_(std::getenv("POPC_FUZZ_IN_PROCESS") != nullptr) {}

CheckingWorker::~CheckingWorker() { stop(); }

void CheckingWorker::start() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
    die("socketpair");
  ::fcntl(fds[0], F_SETFD, FD_CLOEXEC); // the worker inherits only its own end
  std::vector<std::string> env = workerEnvironment(fds[1]);
  std::vector<char *> envp;
  for (auto &e : env)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  char self[] = "/proc/self/exe";
  char *argv[] = {self, nullptr};
  // posix_spawn, not fork: it does not copy the fuzzer's page tables (a fork
  // costs milliseconds with ASan's shadow and a big corpus in memory).
  pid_t pid;
  if (int err = ::posix_spawn(&pid, self, nullptr, nullptr, argv, envp.data()); err != 0) {
    errno = err;
    die("posix_spawn");
  }
  ::close(fds[1]);
  socket_ = fds[0];
  pid_ = pid;
  char ready = 0;
  if (!readAll(socket_, &ready, 1) || ready != 'R')
    die("the worker did not start (does the target call serveIfWorker from LLVMFuzzerInitialize?)");
}

void CheckingWorker::stop() {
  if (pid_ < 0)
    return;
  ::close(socket_); // the worker sees end of input and exits
  socket_ = -1;
  int status;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
}

bool CheckingWorker::passes(std::span<const uint8_t> input, std::vector<uint8_t> *output) {
  if (inProcess_)
    return true;
  if (pid_ < 0)
    start();
  const uint64_t size = input.size();
  char answer = 0;
  if (!sendAll(socket_, &size, sizeof size) || !sendAll(socket_, input.data(), input.size()) ||
      !readAll(socket_, &answer, 1)) {
    stop(); // the worker itself is gone (not just a server): start a new one next time
    refusedByChecker();
    return false;
  }
  if (answer == kDied) {
    refusedByChecker(); // crashed, killed by its alarm, or a sanitizer report
    return false;
  }
  uint64_t outputSize = 0;
  std::vector<uint8_t> discarded;
  std::vector<uint8_t> &bytes = output ? *output : discarded;
  if (answer != kDone || !readAll(socket_, &outputSize, sizeof outputSize))
    die("the worker's answer is garbled");
  bytes.resize(outputSize);
  if (!readAll(socket_, bytes.data(), bytes.size()))
    die("the worker's answer is truncated");
  return true;
}

} // namespace popc::fuzz
