#include "test/conformance/conformance_report.h"

#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace popc::conformance {

namespace {

constexpr Status kStatuses[] = {Status::Pass, Status::Mismatch, Status::Unsupported, Status::Error,
                                Status::DataUnsupported};

// A pass that needed inputs frozen to the test's values (conformance_case.cpp says so in the reason).
bool frozenPass(const Outcome &o) {
  return o.status == Status::Pass && o.reason.rfind("compiled with --freeze-input", 0) == 0;
}

struct Counts {
  size_t total = 0, refused = 0, crashes = 0, frozen = 0;
  size_t by[5] = {};
  size_t pass() const { return by[0]; }
  void add(const Outcome &o, bool refused_) {
    ++total;
    ++by[size_t(o.status)];
    frozen += frozenPass(o);
    crashes += o.crashOrTimeout;
    refused += refused_ && o.status != Status::Pass;
  }
};

std::string percent(size_t part, size_t total) {
  return total ? fmt::format("{:.1f} %", 100.0 * double(part) / double(total)) : "-";
}

Counts countSuite(const RunResults &r, const std::string &suite) {
  Counts c;
  for (size_t i = 0; i < r.tests.size(); ++i)
    if (suite.empty() || r.tests[i].suite == suite)
      c.add(r.outcomes[i], r.refusals.count(r.tests[i].id()));
  return c;
}

struct Target {
  std::string name;
  double goal; // fraction
  Counts counts;
};

std::vector<Target> targets(const RunResults &r) {
  std::vector<Target> out;
  auto has = [&](const std::string &s) { return std::find(r.suites.begin(), r.suites.end(), s) != r.suites.end(); };
  if (has("node") && !r.popartSubset.empty()) {
    Counts c;
    for (size_t i = 0; i < r.tests.size(); ++i)
      if (r.popartSubset.count(r.tests[i].id()))
        c.add(r.outcomes[i], r.refusals.count(r.tests[i].id()));
    out.push_back({fmt::format("node tests using only PopART ops ({} listed)", r.popartSubset.size()), 1.0, c});
  }
  if (has("node"))
    out.push_back({"all node tests", 0.8, countSuite(r, "node")});
  for (const char *s : {"pytorch-converted", "pytorch-operator", "simple"})
    if (has(s))
      out.push_back({fmt::format("{} suite", s), 0.9, countSuite(r, s)});
  return out;
}

bool met(const Target &t) { return t.counts.total && double(t.counts.pass()) >= t.goal * double(t.counts.total) - 1e-9; }
// The goal reached once the principled refusals are set aside (they still count as not passing above).
bool metWithoutRefused(const Target &t) {
  const uint64_t rest = t.counts.total - t.counts.refused;
  return rest && double(t.counts.pass()) >= t.goal * double(rest) - 1e-9;
}
std::string verdict(const Target &t, const char *notMet) {
  if (met(t))
    return "met";
  return metWithoutRefused(t) ? "met without the refused" : notMet;
}

std::string escape(std::string text) {
  std::string out;
  for (char ch : text) {
    if (ch == '|')
      out += "\\|";
    else if (ch == '<')
      out += "&lt;";
    else
      out += ch;
  }
  return out;
}

} // namespace

std::vector<std::string> readList(const std::string &path, bool wholeLine) {
  std::ifstream in(path);
  if (!in)
    fail("{}: cannot open list file", path);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto start = line.find_first_not_of(" \t\r");
    if (start == std::string::npos || line[start] == '#')
      continue;
    line = line.substr(start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r' || line.back() == '\t'))
      line.pop_back();
    if (!wholeLine)
      line = line.substr(0, line.find_first_of(" \t"));
    out.push_back(line);
  }
  return out;
}

void printTable(const RunResults &r) {
  fmt::print("\n{:<20} {:>6} {:>6} {:>7} {:>9} {:>12} {:>6} {:>17} {:>8} {:>8}\n", "suite", "tests", "pass",
             "frozen", "mismatch", "unsupported", "error", "data-unsupported", "refused", "pass %");
  auto row = [](const std::string &name, const Counts &c) {
    fmt::print("{:<20} {:>6} {:>6} {:>7} {:>9} {:>12} {:>6} {:>17} {:>8} {:>8}\n", name, c.total, c.by[0], c.frozen,
               c.by[1], c.by[2], c.by[3], c.by[4], c.refused, percent(c.pass(), c.total));
  };
  for (const auto &s : r.suites)
    row(s, countSuite(r, s));
  if (r.suites.size() > 1)
    row("all", countSuite(r, ""));
  fmt::print("\ntargets:\n");
  for (const auto &t : targets(r))
    fmt::print("  {:<50} {:>4} / {:<4} {:>8}  (goal {:.0f} %) {}{}\n", t.name, t.counts.pass(), t.counts.total,
               percent(t.counts.pass(), t.counts.total), 100 * t.goal, verdict(t, "NOT MET"),
               t.counts.refused ? fmt::format("; {} refused", t.counts.refused) : "");
  const Counts all = countSuite(r, "");
  fmt::print("  {:<50} {:>4}  {}\n", "crashes, hangs and timeouts", all.crashes, all.crashes ? "NOT MET" : "met");
  double compile = 0, jit = 0, run = 0;
  for (const auto &o : r.outcomes) {
    compile += o.compile;
    jit += o.jit;
    run += o.run;
  }
  fmt::print("\n{} tests in {:.1f} s wall with -j {}; summed over tests: compile {:.1f} s, JIT {:.1f} s, run {:.1f} s\n",
             r.tests.size(), r.wallSeconds, r.jobs, compile, jit, run);
}

void writeMarkdown(const RunResults &r, const std::string &path) {
  std::ostringstream md;
  md << "# ONNX conformance\n\n"
        "Every test of Debian's `libonnx-testdata` (`/usr/share/libonnx-testdata/data/<suite>/`) run\n"
        "through the library (import → compile for the default `ipu2` target → JIT → run → compare\n"
        "with rtol 1e-3, atol 1e-5; NaN equals NaN; integers and bool exact; overrides in\n"
        "`test/conformance/tolerances.txt`) by `popc-conformance`, each test in its own process with\n"
        "a time limit. Generated — do not edit; regenerate with\n\n"
        "    build/bin/popc-conformance -j 2 --markdown docs/conformance.md --write-expect test/conformance\n\n"
        "Statuses: **pass**; **mismatch** (wrong numbers, dtype or shape); **unsupported** (the\n"
        "compiler refused the model with a user-facing error, e.g. an operator popc lacks);\n"
        "**error** (anything else: crash, internal error, run-time error, timeout);\n"
        "**data-unsupported** (the test feeds or returns strings, maps, nested sequences or\n"
        "other types host tensors cannot carry). *Refused* counts failing tests listed in\n"
        "`test/conformance/refusals.txt` with a principled reason (shown below).\n\n"
        "Inputs the compiler needs at compile time (a shape, axes, count or condition) are frozen to\n"
        "the test's value, as a user would with `popc-onnx --freeze-input`, when every data set feeds\n"
        "the same value; such passes are counted as *frozen* and name the inputs. Sequence inputs are\n"
        "fed as their tensors `x.0`, `x.1`, ... with the length fixed from the data\n"
        "(`--sequence-input x=N`), empty optionals with `--optional-absent`; sequence outputs are\n"
        "compared element by element (`y.0`, `y.1`, ...).\n\n"
        "## Summary per suite\n\n"
        "| suite | tests | pass | of which frozen | mismatch | unsupported | error | data-unsupported | refused | pass % |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n";
  auto row = [&](const std::string &name, const Counts &c) {
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", name, c.total, c.by[0], c.frozen,
                      c.by[1], c.by[2], c.by[3], c.by[4], c.refused, percent(c.pass(), c.total));
  };
  for (const auto &s : r.suites)
    row(s, countSuite(r, s));
  if (r.suites.size() > 1)
    row("**all**", countSuite(r, ""));

  md << "\n## Targets (issue 4)\n\nRefused: failing tests with a principled refusal (counted as not passing; the "
        "reasons are in the tables below). *Without refused*: pass % of the tests that are not refused.\n\n"
        "| target | pass | of | pass % | refused | without refused | goal | |\n|---|---|---|---|---|---|---|---|\n";
  for (const auto &t : targets(r))
    md << fmt::format("| {} | {} | {} | {} | {} | {} | {:.0f} % | {} |\n", t.name, t.counts.pass(), t.counts.total,
                      percent(t.counts.pass(), t.counts.total), t.counts.refused,
                      percent(t.counts.pass(), t.counts.total - t.counts.refused), 100 * t.goal,
                      verdict(t, "**not met**"));
  const Counts all = countSuite(r, "");
  md << fmt::format("| crashes, hangs and timeouts | {} | {} | | | | 0 | {} |\n", all.crashes, all.total,
                    all.crashes ? "**not met**" : "met");

  // Per op type: every test whose model (If/Loop bodies included) uses it.
  struct OpCount {
    size_t tests = 0, pass = 0;
  };
  std::map<std::string, OpCount> ops;
  for (size_t i = 0; i < r.tests.size(); ++i)
    for (const auto &op : r.tests[i].opTypes) {
      ++ops[op].tests;
      ops[op].pass += r.outcomes[i].status == Status::Pass;
    }
  md << "\n## Per op type\n\nTests (all suites) whose model uses the op type, and how many of them pass. "
        "A failing test may fail because of another op in the same model.\n\n"
        "| op type | PopART op | tests | pass | pass % |\n|---|---|---|---|---|\n";
  for (const auto &[op, c] : ops)
    md << fmt::format("| {} | {} | {} | {} | {} |\n", escape(op), r.popartOps.count(op) ? "yes" : "", c.tests,
                      c.pass, percent(c.pass, c.tests));

  for (const auto &suite : r.suites) {
    md << fmt::format("\n## {} tests\n\n| test | status | reason |\n|---|---|---|\n", suite);
    for (size_t i = 0; i < r.tests.size(); ++i) {
      const auto &t = r.tests[i];
      if (t.suite != suite)
        continue;
      const auto &o = r.outcomes[i];
      std::string reason = o.reason;
      auto ref = r.refusals.find(t.id());
      if (ref != r.refusals.end() && o.status != Status::Pass)
        reason = "refused: " + ref->second + (reason.empty() ? "" : " — " + reason);
      std::string mark = r.popartSubset.count(t.id()) ? " ᴾ" : "";
      md << fmt::format("| `{}`{} | {} | {} |\n", t.name, mark, statusName(o.status), escape(reason));
    }
  }
  md << "\nᴾ: one of the node tests that use only PopART-listed ops.\n";
  std::ofstream out(path);
  if (!(out << md.str()))
    fail("{}: cannot write the markdown table", path);
  fmt::print("wrote {}\n", path);
}

void writeExpectLists(const RunResults &r, const std::string &dir) {
  for (const auto &suite : r.suites) {
    const std::string path = fmt::format("{}/expected_pass_{}.txt", dir, suite);
    std::ofstream out(path);
    out << fmt::format("# {} tests that must pass (ctest onnx.{}). Regenerate, don't edit:\n"
                       "#   build/bin/popc-conformance -j 2 --markdown docs/conformance.md --write-expect test/conformance\n",
                       suite, suite);
    size_t n = 0;
    for (size_t i = 0; i < r.tests.size(); ++i)
      if (r.tests[i].suite == suite && r.outcomes[i].status == Status::Pass) {
        out << r.tests[i].id() << "\n";
        ++n;
      }
    if (!out)
      fail("{}: cannot write", path);
    fmt::print("wrote {} ({} tests)\n", path, n);
  }
}

bool checkNoCrashes(const RunResults &r) {
  std::vector<std::string> crashes;
  for (size_t i = 0; i < r.tests.size(); ++i)
    if (r.outcomes[i].crashOrTimeout)
      crashes.push_back(fmt::format("{}: {}", r.tests[i].id(), r.outcomes[i].reason));
  if (crashes.empty())
    return true;
  fmt::print("\n{} test(s) crashed, hung or timed out (listed or not, each fails the run):\n", crashes.size());
  for (const auto &c : crashes)
    fmt::print("  {}\n", c);
  return false;
}

bool checkExpectations(const RunResults &r, const std::vector<std::string> &expectFiles) {
  std::set<std::string> expected;
  for (const auto &f : expectFiles)
    for (const auto &id : readList(f))
      expected.insert(id);
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < r.tests.size(); ++i)
    index[r.tests[i].id()] = i;
  std::vector<std::string> regressions, newPasses;
  size_t checked = 0;
  for (const auto &id : expected) {
    auto it = index.find(id);
    if (it == index.end()) {
      const std::string suite = id.substr(0, id.find('/'));
      if (std::find(r.suites.begin(), r.suites.end(), suite) != r.suites.end())
        regressions.push_back(id + ": not found in the test data");
      continue; // a suite not run (or filtered out)
    }
    ++checked;
    const auto &o = r.outcomes[it->second];
    if (o.status != Status::Pass)
      regressions.push_back(fmt::format("{}: {}: {}", id, statusName(o.status), o.reason));
  }
  for (size_t i = 0; i < r.tests.size(); ++i)
    if (r.outcomes[i].status == Status::Pass && !expected.count(r.tests[i].id()))
      newPasses.push_back(r.tests[i].id());
  if (!newPasses.empty()) {
    fmt::print("\n{} newly passing test(s), not yet in the expect list (regenerate with --write-expect):\n",
               newPasses.size());
    for (const auto &id : newPasses)
      fmt::print("  {}\n", id);
  }
  if (!regressions.empty()) {
    fmt::print("\nREGRESSIONS: {} test(s) in the expect list did not pass:\n", regressions.size());
    for (const auto &line : regressions)
      fmt::print("  {}\n", line);
    return false;
  }
  fmt::print("\nall {} expected tests pass\n", checked);
  return true;
}

} // namespace popc::conformance
