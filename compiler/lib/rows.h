// Row-wise lowering shared by ops that work along axes (reductions, arg-max,
// top-k, normalisations): each operand is seen as `rows` rows after a
// permutation that makes the op's axes innermost. Rows are spread over tiles
// whole and split over each tile's worker contexts; one vertex per worker
// reads its rows (gathered by the exchange) and writes its rows of every output.
#pragma once
#include "compiler/ir/op_attrs.h"
#include "compiler/lib/lowering.h"

#include <functional>

namespace popc::lib {

// One operand: a value, the permutation giving its row-major row layout
// (empty = identity) and its elements per row.
struct RowOperand {
  Value value;
  std::vector<int64_t> perm;
  uint64_t perRow = 1;
  bool whole = false; // inputs only: the whole tensor goes to every vertex (e.g. a table)
};

// Permutation moving `axes` (sorted) to the end, other dims keeping their order.
std::vector<int64_t> axesLastPerm(size_t rank, const std::vector<int64_t> &axes);

// Builds the op: outputs are mapped row-block by row-block to the tiles that
// compute them (identity perm) or linearly. `spec(rowCount)` gives the vertex
// for `rowCount` rows; its fields are the inputs then the outputs.
void lowerRowWise(Lowering &L, const std::string &name, const std::vector<RowOperand> &inputs,
                  const std::vector<RowOperand> &outputs, uint64_t rows,
                  const std::function<codegen::KernelSpec(uint32_t rowCount)> &spec);
// Same, for vertices that need to know which rows they get (e.g. a row's channel).
void lowerRowWiseAt(Lowering &L, const std::string &name, const std::vector<RowOperand> &inputs,
                    const std::vector<RowOperand> &outputs, uint64_t rows,
                    const std::function<codegen::KernelSpec(uint64_t firstRow, uint32_t rowCount)> &spec);

// A constant device tensor holding `data` (zero-filled to the tensor's size),
// e.g. for an omitted optional input a codelet still needs a field for.
Value constantTensor(Lowering &L, const std::string &name, const ir::TensorInfo &info, std::vector<uint8_t> data = {});

// The window codelets' geometry arguments: input dims, output dims, kernel,
// strides, begin pads and dilations, each padded to 3 spatial dims with leading
// size-1 dims (pads 0). Also returns the kernel volume in `kernelVolume`.
std::vector<int64_t> windowArgs3(const Shape &inSpatial, const ir::WindowParams &p, uint64_t &kernelVolume);

// Ops that need all of their operands at once: one vertex on one tile, which
// also holds the outputs. Tile memory bounds the size (the memory planner
// reports a tensor too large for it like any other out-of-memory).
void lowerOnOneTile(Lowering &L, const std::string &name, const std::vector<Value> &inputs,
                    const std::vector<Value> &outputs, const codegen::KernelSpec &spec);

// A field description for codelet specs.
inline codegen::FieldInfo codeletField(const std::string &name, uint64_t elements, DType dtype,
                                       codegen::FieldAccess access) {
  return {name, uint32_t(elements * dtypeSize(dtype)), access};
}

} // namespace popc::lib
