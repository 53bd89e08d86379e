// Runs independent pieces of compile-time work on every core. The pieces
// write only their own results, so the output does not depend on the number
// of threads or on their timing.
#pragma once
#include <cstddef>
#include <functional>

namespace popc {

// Calls work(i) for every i in [0, n), on up to hardware_concurrency threads
// (the calling thread among them). If any call throws, the exception of the
// lowest such i is rethrown once all threads have stopped.
void parallelFor(size_t n, const std::function<void(size_t)> &work);

} // namespace popc
