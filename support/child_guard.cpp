#include "support/child_guard.h"
#include "support/file_io.h"

#include "support/error.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <new>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace popc {

namespace {


[[noreturn]] void childMain(const ChildWorkWithOutput &work, unsigned seconds, uint64_t memoryBytes, int progress,
                            int outputFd) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::alarm(seconds);
  if (memoryBytes)
    limitAddressSpaceGrowth(memoryBytes);
  if (int null = ::open("/dev/null", O_WRONLY); null >= 0) {
    ::dup2(null, STDOUT_FILENO); // the parent prints what the work says when it repeats it
    ::dup2(null, STDERR_FILENO); // a library's fatal-error text would break the one-line error
  }
  try {
    std::vector<uint8_t> output;
    work(
        [progress](uint32_t i) {
          if (::write(progress, &i, sizeof i) != sizeof i)
            ::_exit(4);
        },
        output);
    if (!writeAll(outputFd, output.data(), output.size()))
      ::_exit(4);
  } catch (const Error &) {
    ::_exit(0); // a clean refusal: the caller's own run reports it
  } catch (const std::bad_alloc &) {
    exitOutOfMemory();
  } catch (...) {
    ::_exit(3);
  }
  ::_exit(0); // no atexit handlers or static destructors of the parent's state
}

// The bytes the child left in the memfd `fd` (positioned at their end).
std::vector<uint8_t> readOutput(int fd) {
  struct stat info {};
  if (::fstat(fd, &info) != 0 || ::lseek(fd, 0, SEEK_SET) != 0)
    fail("cannot read a checking child process's output: {}", std::strerror(errno));
  std::vector<uint8_t> bytes(static_cast<size_t>(info.st_size));
  errno = 0;
  if (readFull(fd, bytes.data(), bytes.size()) != bytes.size())
    fail("cannot read a checking child process's output: {}", errno ? std::strerror(errno) : "truncated");
  return bytes;
}

// The address space this process has mapped (/proc/self/statm's first field,
// in pages); 0 when it cannot be read.
uint64_t mappedBytes() {
  FILE *statm = std::fopen("/proc/self/statm", "r");
  if (!statm)
    return 0;
  unsigned long long pages = 0;
  if (std::fscanf(statm, "%llu", &pages) != 1)
    pages = 0;
  std::fclose(statm);
  return pages * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

} // namespace

void exitOutOfMemory() { ::_exit(kOutOfMemoryExit); }

void limitAddressSpaceGrowth(uint64_t bytes) {
  std::set_new_handler([] { exitOutOfMemory(); });
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0)
    return;
  const uint64_t mapped = mappedBytes();
  uint64_t wanted = mapped > UINT64_MAX - bytes ? UINT64_MAX : mapped + bytes;
  if (limit.rlim_max != RLIM_INFINITY && wanted > limit.rlim_max)
    wanted = limit.rlim_max;
  limit.rlim_cur = wanted;
  ::setrlimit(RLIMIT_AS, &limit);
}

std::optional<ChildFailure> runInChild(const std::function<void(const std::function<void(uint32_t)> &step)> &work,
                                       unsigned seconds, uint64_t memoryBytes) {
  std::vector<uint8_t> none;
  return runInChildWithOutput([&](const auto &step, std::vector<uint8_t> &) { work(step); }, seconds, memoryBytes,
                              none);
}

std::optional<ChildFailure> runInChildWithOutput(const ChildWorkWithOutput &work, unsigned seconds,
                                                 uint64_t memoryBytes, std::vector<uint8_t> &output) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    fail("cannot start a checking child process: pipe: {}", std::strerror(errno));
  const int outputFd = ::memfd_create("popc-child-output", MFD_CLOEXEC);
  if (outputFd < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    fail("cannot start a checking child process: memfd_create: {}", std::strerror(err));
  }
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    ::close(outputFd);
    fail("cannot start a checking child process: fork: {}", std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    childMain(work, seconds, memoryBytes, fds[1], outputFd);
  }
  ::close(fds[1]);
  ChildFailure failure;
  uint32_t value = 0;
  ssize_t n;
  while ((n = ::read(fds[0], &value, sizeof value)) == sizeof value || (n < 0 && errno == EINTR))
    if (n > 0)
      failure.step = value;
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    try {
      output = readOutput(outputFd);
    } catch (...) {
      ::close(outputFd);
      throw;
    }
    ::close(outputFd);
    return std::nullopt;
  }
  ::close(outputFd);
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    failure.what = fmt::format("did not finish within {} s", seconds);
  else if (WIFEXITED(status) && WEXITSTATUS(status) == kOutOfMemoryExit && memoryBytes)
    failure.what = fmt::format("ran out of its {} MiB memory budget", memoryBytes >> 20);
  else if (WIFSIGNALED(status))
    failure.what = fmt::format("crashed ({})", ::strsignal(WTERMSIG(status)));
  else
    failure.what = fmt::format("failed (exit {})", WEXITSTATUS(status));
  return failure;
}

} // namespace popc
