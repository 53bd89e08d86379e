// popc-conformance: runs ONNX backend tests (Debian libonnx-testdata) through the
// library — import, compile, JIT, run, compare — each in a forked child with a
// time limit, N at a time, and classifies each as pass / mismatch / unsupported /
// error / data-unsupported. Prints one line per test and a table; writes
// docs/conformance.md (--markdown) and checks/writes the expected-pass lists.
#include "test/conformance/conformance_case.h"
#include "test/conformance/conformance_report.h"

#include "support/error.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <set>
#include <thread>
#include <unistd.h>

namespace {

using namespace popc::conformance;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const std::vector<std::string> kSuites = {"node", "pytorch-converted", "pytorch-operator", "simple"};

struct Running {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  Clock::time_point start;
  std::string buffer, phase = "start", logPath;
  bool gotResult = false;
  Outcome outcome;
};

// The last non-empty line the child printed (a crash's assertion or abort message).
std::string lastLogLine(const std::string &path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      last = line;
  if (last.size() > 300)
    last = last.substr(0, 300) + "...";
  return last;
}

void handleLine(Running &r, const std::string &line) {
  if (line.rfind("phase ", 0) == 0) {
    r.phase = line.substr(6);
  } else if (line.rfind("time ", 0) == 0) {
    char what[32] = {};
    double s = 0;
    if (std::sscanf(line.c_str(), "time %31s %lf", what, &s) == 2) {
      if (!std::strcmp(what, "compile"))
        r.outcome.compile += s;
      else if (!std::strcmp(what, "jit"))
        r.outcome.jit += s;
      else if (!std::strcmp(what, "run"))
        r.outcome.run += s;
    }
  } else if (line.rfind("result ", 0) == 0) {
    const std::string rest = line.substr(7);
    const auto tab = rest.find('\t');
    const std::string status = rest.substr(0, tab);
    r.outcome.reason = tab == std::string::npos ? "" : rest.substr(tab + 1);
    for (Status s : {Status::Pass, Status::Mismatch, Status::Unsupported, Status::Error, Status::DataUnsupported})
      if (status == statusName(s))
        r.outcome.status = s;
    r.gotResult = true;
  }
}

// Reads what the child sent (non-blocking); true at end of file (the child exited or crashed).
bool drain(Running &r) {
  char buf[4096];
  bool eof = false;
  for (;;) {
    ssize_t n = ::read(r.fd, buf, sizeof buf);
    if (n == 0)
      eof = true;
    if (n <= 0)
      break;
    r.buffer.append(buf, size_t(n));
  }
  size_t pos;
  while ((pos = r.buffer.find('\n')) != std::string::npos) {
    handleLine(r, r.buffer.substr(0, pos));
    r.buffer.erase(0, pos + 1);
  }
  return eof;
}

// Final outcome from the child's messages and its wait status.
void finish(Running &r, int waitStatus, bool timedOut, unsigned timeout) {
  r.outcome.seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
  const std::string log = lastLogLine(r.logPath);
  std::error_code ec;
  fs::remove(r.logPath, ec);
  auto error = [&](const std::string &what) {
    r.outcome.status = Status::Error;
    r.outcome.crashOrTimeout = true;
    r.outcome.reason = what + (log.empty() ? "" : ": " + log);
  };
  if (timedOut)
    return error(fmt::format("timeout: over {} s during {}", timeout, r.phase));
  if (WIFSIGNALED(waitStatus))
    return error(fmt::format("crash: {} (signal {}) during {}", strsignal(WTERMSIG(waitStatus)),
                             WTERMSIG(waitStatus), r.phase));
  if (!r.gotResult)
    return error(fmt::format("child exited with code {} during {} without a result",
                             WIFEXITED(waitStatus) ? WEXITSTATUS(waitStatus) : -1, r.phase));
}

Running launch(const TestCase &test, size_t index, const std::string &workDir) {
  int fds[2];
  if (::pipe(fds) != 0)
    popc::fail("pipe: {}", std::strerror(errno));
  Running r;
  r.index = index;
  r.start = Clock::now();
  r.logPath = fmt::format("{}/{}.log", workDir, index);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0)
    popc::fail("fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::close(fds[0]);
    // The library's own messages (warnings, an abort's text) go to a log the parent reads.
    if (FILE *f = std::fopen(r.logPath.c_str(), "w")) {
      ::dup2(fileno(f), 1);
      ::dup2(fileno(f), 2);
    }
    int rc = runTestInChild(test, fds[1]);
    std::fflush(stdout);
    std::fflush(stderr);
    ::_exit(rc);
  }
  ::close(fds[1]);
  ::fcntl(fds[0], F_SETFL, O_NONBLOCK);
  r.pid = pid;
  r.fd = fds[0];
  return r;
}

void logLine(const TestCase &t, const Outcome &o, bool quiet) {
  if (quiet && o.status == Status::Pass)
    return;
  std::string status = statusName(o.status);
  std::transform(status.begin(), status.end(), status.begin(), ::toupper);
  fmt::print("{:<16} {} ({:.1f} s){}{}\n", status, t.id(), o.seconds, o.reason.empty() ? "" : ": ", o.reason);
  std::fflush(stdout);
}

// Runs every test not decided up front, `jobs` children at a time.
void runAll(RunResults &res, const std::vector<size_t> &todo, unsigned jobs, unsigned timeout,
            const std::string &workDir, bool quiet) {
  std::deque<size_t> queue(todo.begin(), todo.end());
  std::vector<Running> running;
  while (!queue.empty() || !running.empty()) {
    while (!queue.empty() && running.size() < jobs) {
      running.push_back(launch(res.tests[queue.front()], queue.front(), workDir));
      queue.pop_front();
    }
    std::vector<pollfd> pfds;
    for (auto &r : running)
      pfds.push_back({r.fd, POLLIN, 0});
    ::poll(pfds.data(), pfds.size(), 200);
    for (size_t k = 0; k < running.size();) {
      auto &r = running[k];
      bool done = false, timedOut = false;
      int status = 0;
      if (pfds[k].revents & (POLLIN | POLLHUP | POLLERR) && drain(r)) {
        ::waitpid(r.pid, &status, 0);
        done = true;
      }
      if (!done && Clock::now() - r.start > std::chrono::seconds(timeout)) {
        ::kill(r.pid, SIGKILL);
        ::waitpid(r.pid, &status, 0);
        done = timedOut = true;
      }
      if (!done) {
        ++k;
        continue;
      }
      ::close(r.fd);
      finish(r, status, timedOut, timeout);
      res.outcomes[r.index] = r.outcome;
      logLine(res.tests[r.index], r.outcome, quiet);
      running.erase(running.begin() + long(k));
      pfds.erase(pfds.begin() + long(k));
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"popc-conformance: run ONNX backend tests through the popc library and report a "
               "pass table.\n\nExamples:\n"
               "  popc-conformance -j 2                          # all four suites\n"
               "  popc-conformance --suite node test_abs test_add  # some tests\n"
               "  popc-conformance -j 2 --markdown docs/conformance.md --write-expect test/conformance",
               "popc-conformance"};
  std::string dataRoot = "/usr/share/libonnx-testdata/data", markdown, writeExpect, listFile;
  std::string here = POPC_CONFORMANCE_DIR;
  std::string tolerances = here + "/tolerances.txt", refusals = here + "/refusals.txt";
  std::string subset = here + "/popart-subset-node-tests.txt", popartOps = here + "/popart-onnx-ops.txt";
  std::vector<std::string> suites, filters, expectFiles;
  unsigned jobs = std::max(1u, std::thread::hardware_concurrency()), timeout = 120;
  bool quiet = false;
  app.add_option("tests", filters, "Only these tests: suite/test or test (default: all of the selected suites)");
  app.add_option("--data-root", dataRoot, "libonnx-testdata data folder")->capture_default_str();
  app.add_option("--suite", suites, "Suites to run (repeatable; default all)")
      ->check(CLI::IsMember(kSuites))->allow_extra_args(false);
  app.add_option("--list", listFile, "Only the tests named in this file (suite/test per line)");
  app.add_option("-j,--jobs", jobs, "Tests run in parallel (default: cores)")->check(CLI::Range(1u, 256u));
  app.add_option("--timeout", timeout, "Seconds per test before it is killed and counted as an error")
      ->check(CLI::Range(1u, 36000u))->capture_default_str();
  app.add_option("--tolerances", tolerances, "Per-test 'suite/test rtol atol' overrides")->capture_default_str();
  app.add_option("--refusals", refusals, "Principled refusals: 'suite/test reason' per line")->capture_default_str();
  app.add_option("--popart-subset", subset, "Node tests that use only PopART ops")->capture_default_str();
  app.add_option("--popart-ops", popartOps, "Op types PopART supports")->capture_default_str();
  app.add_option("--expect", expectFiles, "Tests that must pass (repeatable); exit 1 if one does not")
      ->allow_extra_args(false);
  app.add_option("--write-expect", writeExpect, "Write DIR/expected_pass_<suite>.txt from this run's passes");
  app.add_option("--markdown", markdown, "Write the tables (docs/conformance.md) to FILE");
  app.add_flag("-q,--quiet", quiet, "Log failing tests only");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }

  try {
    RunResults res;
    res.jobs = jobs;
    res.suites = suites.empty() ? kSuites : suites;
    // Keep the canonical suite order whatever the command line said.
    std::vector<std::string> ordered;
    for (const auto &s : kSuites)
      if (std::find(res.suites.begin(), res.suites.end(), s) != res.suites.end())
        ordered.push_back(s);
    res.suites = ordered;

    std::map<std::string, std::pair<double, double>> tolOverrides;
    for (const auto &line : readList(tolerances, true)) {
      char id[512];
      double rtol, atol;
      if (std::sscanf(line.c_str(), "%511s %lf %lf", id, &rtol, &atol) != 3)
        popc::fail("{}: '{}': expected 'suite/test rtol atol'", tolerances, line);
      tolOverrides[id] = {rtol, atol};
    }
    for (const auto &line : readList(refusals, true)) {
      const auto sp = line.find_first_of(" \t");
      if (sp == std::string::npos)
        popc::fail("{}: '{}': expected 'suite/test reason'", refusals, line);
      res.refusals[line.substr(0, sp)] = line.substr(line.find_first_not_of(" \t", sp));
    }
    if (fs::exists(subset))
      for (const auto &id : readList(subset))
        res.popartSubset.insert(id);
    if (fs::exists(popartOps))
      for (const auto &op : readList(popartOps))
        res.popartOps.insert(op);
    std::set<std::string> only(filters.begin(), filters.end());
    if (!listFile.empty())
      for (const auto &id : readList(listFile))
        only.insert(id);
    if (!writeExpect.empty() && !only.empty())
      popc::fail("--write-expect needs whole suites: drop the test names / --list");

    for (const auto &suite : res.suites) {
      const fs::path dir = fs::path(dataRoot) / suite;
      if (!fs::is_directory(dir))
        popc::fail("{}: not found (apt install libonnx-testdata, or pass --data-root)", dir.string());
      std::vector<std::string> names;
      for (const auto &entry : fs::directory_iterator(dir))
        if (entry.is_directory())
          names.push_back(entry.path().filename().string());
      std::sort(names.begin(), names.end());
      for (const auto &name : names) {
        if (!only.empty() && !only.count(suite + "/" + name) && !only.count(name))
          continue;
        TestCase t;
        t.suite = suite;
        t.name = name;
        t.dir = (dir / name).string();
        auto tol = tolOverrides.find(t.id());
        if (tol != tolOverrides.end())
          t.tolerance.rtol = tol->second.first, t.tolerance.atol = tol->second.second;
        res.tests.push_back(std::move(t));
      }
    }
    if (res.tests.empty())
      popc::fail("no tests selected (check the names: suite/test_x or test_x)");

    // Model facts in the parent (no threads yet, so forking stays safe).
    res.outcomes.resize(res.tests.size());
    std::vector<size_t> todo;
    for (size_t i = 0; i < res.tests.size(); ++i) {
      auto &t = res.tests[i];
      readModelInfo(t);
      auto &o = res.outcomes[i];
      if (!t.modelError.empty()) {
        o = {Status::Error, t.modelError};
        logLine(t, o, quiet);
      } else if (!t.dataIssue.empty()) {
        o = {Status::DataUnsupported, t.dataIssue};
        logLine(t, o, quiet);
      } else {
        todo.push_back(i);
      }
    }

    const std::string workDir = fmt::format("{}/popc-conformance-{}", fs::temp_directory_path().string(), ::getpid());
    fs::create_directories(workDir);
    const auto t0 = Clock::now();
    runAll(res, todo, jobs, timeout, workDir, quiet);
    res.wallSeconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::error_code ec;
    fs::remove_all(workDir, ec);

    printTable(res);
    if (!markdown.empty())
      writeMarkdown(res, markdown);
    if (!writeExpect.empty())
      writeExpectLists(res, writeExpect);
    bool ok = expectFiles.empty() || checkExpectations(res, expectFiles);
    // A crash or a timeout fails the run wherever it is, listed or not: the
    // expect lists guard passes, this guards the runner's "0 crashes" goal.
    if (!expectFiles.empty() && !checkNoCrashes(res))
      ok = false;
    return ok ? 0 : 1;
  } catch (const std::exception &e) {
    fmt::print(stderr, "popc-conformance: error: {}\n", e.what());
    return 1;
  }
}
