// poprun-lite's ways to give inputs besides --inputs FILE.npz, as tvmc and
// iree-run-module users expect: one input from a .npy file or a literal
// (--input NAME=FILE.npy, --input NAME=2x3xf32=0.5), and filling the rest
// (--fill random|zeros|ones, --seed N).
#pragma once
#include "runtime/engine.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace popc::session {

// Parses "NAME=FILE.npy" or "NAME=[DIMxDIMx...x]TYPE=VALUES": TYPE is f16 bf16
// f32 f64 i8 i16 i32 i64 u8 u16 u32 u64 or bool; VALUES is one value for every
// element or one per element, separated by commas or spaces ("[...]" allowed).
// Throws popc::Error naming the argument and the fix.
std::pair<std::string, runtime::HostTensor> parseInputArgument(const std::string &arg, uint64_t maxBytes);

enum class FillMode { None, Random, Zeros, Ones };
FillMode parseFillMode(const std::string &mode); // "", "random", "zeros", "ones"

// Adds every model input missing from `inputs`, filled per `mode`: random is
// uniform in [-1, 1) for floats, in [0, 10) for integers and 0/1 for bool, from
// `seed` (the same seed gives the same bytes on every machine).
void fillMissingInputs(runtime::HostTensorMap &inputs, const std::vector<runtime::IoDesc> &modelInputs,
                       FillMode mode, uint64_t seed);

// --iterations K over a dataset: an input whose leading dimension is K times the
// model's (K slices of one run's array) gives run k its k-th slice; any other
// input is the same for every run. Returns the names of those dataset inputs.
std::set<std::string> datasetInputs(const runtime::HostTensorMap &inputs,
                                    const std::vector<runtime::IoDesc> &modelInputs, uint64_t runs);
// Sets run k's slice of each dataset input `names` of `inputs` in `run` (which
// holds the other inputs already).
void selectIteration(const runtime::HostTensorMap &inputs, const std::vector<runtime::IoDesc> &modelInputs,
                     const std::set<std::string> &names, uint64_t k, runtime::HostTensorMap &run);

} // namespace popc::session
