// popc graph API, everything: `#include <popc/poplar.hpp>` and
// `using namespace popc::api; using namespace popc::api::program;`.
#pragma once
#include "popc/Engine.hpp"
#include "popc/Graph.hpp"
#include "popc/Program.hpp"
#include "popc/Target.hpp"
#include "popc/Tensor.hpp"
