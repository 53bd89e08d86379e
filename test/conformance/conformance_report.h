// Results of a conformance run: the console table, docs/conformance.md, and
// the expected-pass lists (read for --expect, written by --write-expect).
#pragma once
#include "test/conformance/conformance_case.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace popc::conformance {

struct Outcome {
  Status status = Status::Error;
  std::string reason;
  bool crashOrTimeout = false;                 // a crash, abort, hang or timeout (target: zero)
  double seconds = 0, compile = 0, jit = 0, run = 0; // wall times of the child
};

struct RunResults {
  std::vector<TestCase> tests;     // sorted by suite order, then name
  std::vector<Outcome> outcomes;   // same index
  std::vector<std::string> suites; // the suites that were run, in order
  std::map<std::string, std::string> refusals; // id → principled reason
  std::set<std::string> popartSubset;          // node/... ids
  std::set<std::string> popartOps;             // op types PopART lists
  double wallSeconds = 0;
  unsigned jobs = 1;
};

// Lines of a list file, without blank lines and '#' comments; a first
// whitespace-separated word only unless `wholeLine`.
std::vector<std::string> readList(const std::string &path, bool wholeLine = false);

void printTable(const RunResults &r);
void writeMarkdown(const RunResults &r, const std::string &path);
// Writes <dir>/expected_pass_<suite>.txt for every suite run.
void writeExpectLists(const RunResults &r, const std::string &dir);
// Returns false (and prints why) when a listed test did not pass; prints newly passing tests.
bool checkExpectations(const RunResults &r, const std::vector<std::string> &expectFiles);
// Returns false (and lists them) when any test crashed, hung or timed out.
bool checkNoCrashes(const RunResults &r);

} // namespace popc::conformance
