#include "support/child_guard.h"

#include "support/error.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace popc {

namespace {

[[noreturn]] void childMain(const std::function<void(const std::function<void(uint32_t)> &)> &work, unsigned seconds,
                            int progress) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::alarm(seconds);
  if (int null = ::open("/dev/null", O_WRONLY); null >= 0) {
    ::dup2(null, STDOUT_FILENO); // the parent prints what the work says when it repeats it
    ::dup2(null, STDERR_FILENO); // a library's fatal-error text would break the one-line error
  }
  try {
    work([progress](uint32_t i) {
      if (::write(progress, &i, sizeof i) != sizeof i)
        ::_exit(4);
    });
  } catch (const Error &) {
    ::_exit(0); // a clean refusal: the caller's own run reports it
  } catch (...) {
    ::_exit(3);
  }
  ::_exit(0); // no atexit handlers or static destructors of the parent's state
}

} // namespace

std::optional<ChildFailure> runInChild(const std::function<void(const std::function<void(uint32_t)> &step)> &work,
                                       unsigned seconds) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    fail("cannot start a checking child process: pipe: {}", std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    fail("cannot start a checking child process: fork: {}", std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    childMain(work, seconds, fds[1]);
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
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return std::nullopt;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    failure.what = fmt::format("did not finish within {} s", seconds);
  else if (WIFSIGNALED(status))
    failure.what = fmt::format("crashed ({})", ::strsignal(WTERMSIG(status)));
  else
    failure.what = fmt::format("failed (exit {})", WEXITSTATUS(status));
  return failure;
}

} // namespace popc
