#include "runtime/bitcode_probe.h"

#include "runtime/bitcode_gate.h"
#include "support/error.h"
#include "support/limits.h"

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace popc::runtime {

namespace {

// Child side: reports each module's index before parsing it, so the parent
// can name the one it died on. Never returns.
[[noreturn]] void probeInChild(const std::vector<CodeModuleRef> &modules, int progress) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  ::alarm(limits::kBitcodeProbeSeconds);
  if (int null = ::open("/dev/null", O_WRONLY); null >= 0)
    ::dup2(null, STDERR_FILENO); // LLVM's fatal-error text would break the one-line error
  for (uint32_t i = 0; i < modules.size(); ++i) {
    if (::write(progress, &i, sizeof i) != sizeof i)
      ::_exit(4);
    try {
      llvm::LLVMContext context;
      loadCodeModule(context, modules[i].bitcode, "", modules[i].entrySymbols);
    } catch (const Error &) {
      ::_exit(0); // a clean refusal: the parent's own parse reports it
    } catch (...) {
      ::_exit(3);
    }
  }
  ::_exit(0);
}

} // namespace

void probeCodeModules(const std::vector<CodeModuleRef> &modules, const std::string &label) {
  if (modules.empty())
    return;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    fail("{}: cannot check the code modules in a child process: pipe: {}", label, std::strerror(errno));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    fail("{}: cannot check the code modules in a child process: fork: {}", label, std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    probeInChild(modules, fds[1]);
  }
  ::close(fds[1]);
  uint32_t last = 0, index = 0;
  ssize_t n;
  while ((n = ::read(fds[0], &index, sizeof index)) == sizeof index || (n < 0 && errno == EINTR))
    if (n > 0)
      last = index;
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return;
  std::string what;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
    what = fmt::format("did not finish within {} s", limits::kBitcodeProbeSeconds);
  else if (WIFSIGNALED(status))
    what = fmt::format("crashed ({})", ::strsignal(WTERMSIG(status)));
  else
    what = fmt::format("failed (exit {})", WEXITSTATUS(status));
  fail("{}: code module {}: LLVM's bitcode reader {} on it; the module is corrupt or crafted: recompile the model",
       label, last, what);
}

} // namespace popc::runtime
