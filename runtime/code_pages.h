// Hands back the resident pages of LLVM's own machine code once the JIT is
// done with it, as the runner hands back the popef's pages once it has read
// them: libLLVM's executable mappings are clean file pages (tens of MB
// resident after a compile or even a cache hit's link), read again from the
// page cache should LLVM run later. Best effort, never fails; left alone
// under a debugger (its breakpoints live in private copies of those pages).
#pragma once

namespace popc::runtime {

void releaseLlvmCodePages();

} // namespace popc::runtime
