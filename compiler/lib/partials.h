// Input-channel (reduction-dimension) splits, shared by the conv and matmul
// planners: each slice of a block computes a partial result on its own tile,
// then the block's first tile sums the slices (Poplibs' reduction over a split
// input-channel / K dimension).
#pragma once
#include "compiler/lib/lowering.h"

namespace popc::lib {

// Each vertex of the reduce sums at least this many elements (fewer, fuller
// calls), so a block's reduce keeps up to all six workers busy.
constexpr uint64_t kMinReduceChunk = 16;

// Cycles of the reduce step that sums `slices` partials of `outputs` elements
// per block, after moving the other slices' partials to the block's first tile,
// as the cycle model charges them (the Sum vertex costs 10 + slices per element).
uint64_t partialReduceCycles(const graph::Target &t, uint64_t outputs, uint64_t slices, uint64_t es);

// A tensor of partials [slices][like's shape] whose slice j of every block sits
// on that block's tile + j, with the same layout as the block's output there.
// `blocks` lists each block's first tile and its output intervals (on that tile).
struct PartialBlock {
  uint32_t tile;
  std::vector<graph::Interval> out;
};
Value newPartials(Lowering &L, const std::string &name, const ir::TensorInfo &outInfo, int64_t slices,
                  const std::vector<PartialBlock> &blocks);

// The reduce step: each block's first tile sums its slices of `partials` into `out`.
void reducePartials(Lowering &L, const std::string &name, const Value &partials, const Value &out,
                    int64_t slices, const std::vector<PartialBlock> &blocks, uint64_t minChunk = kMinReduceChunk);

} // namespace popc::lib
