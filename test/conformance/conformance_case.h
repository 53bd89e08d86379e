// One ONNX backend test: what the model declares (read in the parent, before
// any fork) and how the forked child runs it through the library.
#pragma once
#include "formats/npz/compare.h"

#include <set>
#include <string>
#include <vector>

namespace popc::conformance {

enum class Status { Pass, Mismatch, Unsupported, Error, DataUnsupported };
const char *statusName(Status s); // "pass", "mismatch", ...

struct TestCase {
  std::string suite, name; // "node", "test_abs"
  std::string dir;         // <data-root>/<suite>/<name>
  std::string id() const { return suite + "/" + name; }

  // From model.onnx (parsed by readModelInfo).
  std::vector<std::string> inputs;  // graph inputs that are not initializers, in order
  std::vector<std::string> outputs; // graph outputs, in order
  std::vector<std::string> opTypes; // sorted, unique; includes If/Loop bodies; "domain::Op" outside ai.onnx
  std::string dataIssue;            // non-empty: the test feeds data popc cannot carry
  std::string modelError;           // non-empty: model.onnx could not be read
  std::vector<std::string> dataSets; // test_data_set_* folders, sorted
  std::set<std::string> dynamicInputs;  // inputs with a dimension the model leaves open
  std::set<std::string> bfloat16Values; // inputs/outputs of type bfloat16 (their data is stored as uint16)
  // Inputs/outputs that are sequences or optionals (their .pb files hold a
  // SequenceProto / OptionalProto). A sequence `x` of N tensors is fed as x.0 ...
  // x.N-1 with --sequence-input x=N, an empty optional with --optional-absent.
  std::set<std::string> sequenceValues, optionalValues;

  npz::Tolerance tolerance;
};

// Fills the model-derived fields of `test`. Never throws (errors go to modelError).
void readModelInfo(TestCase &test);

// What the child reports back, one line per message on `fd`:
//   "phase <compile|load-data|jit|run|compare>", "time <phase> <seconds>",
//   "result <status>\t<reason>". The parent keeps the last phase for crashes.
// Runs the whole test in this process; never throws. Returns the exit code.
int runTestInChild(const TestCase &test, int fd);

} // namespace popc::conformance
