// A hook for profilers: the engine reports every program node it runs, in
// execution order (a Repeat's children once per iteration, a Call's function
// each time). Costs are a pure function of the executable (cycle_model.h), so
// the trace is all an execution profile needs. No observer, no cost.
#pragma once
#include "formats/popef/popef.h"

namespace popc::runtime {

class ProgramObserver {
public:
  virtual ~ProgramObserver() = default;
  // `p` is a node of the running executable's program tree (main or a function).
  virtual void onProgram(const ::popef::fb::Program &p) = 0;
};

} // namespace popc::runtime
