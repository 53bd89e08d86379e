// Runs independent pieces of work (the compiler's, the popef verifier's) on
// several threads. The pieces write only their own results, so the output
// does not depend on the number of threads or on their timing.
#pragma once
#include <cstddef>
#include <functional>

namespace popc {

// Calls work(i) for every i in [0, n), on up to `threads` threads (0: one per
// core; the calling thread among them). If any call throws, the exception of
// the lowest such i is rethrown once all threads have stopped: the error a
// sequential loop would have reported first.
void parallelFor(size_t n, const std::function<void(size_t)> &work, unsigned threads = 0);

} // namespace popc
