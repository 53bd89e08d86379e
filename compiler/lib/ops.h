// Registration hooks: each lowering file adds its op types to the table.
// Explicit calls (not static initialisers) so nothing is dropped by the linker.
#pragma once
#include "compiler/lib/lowering.h"

#include <map>

namespace popc::lib {

using LoweringTable = std::map<std::string, LowerFn>;

void registerElementwiseLowerings(LoweringTable &table);
void registerMatMulLowerings(LoweringTable &table);
void registerConvLowerings(LoweringTable &table);
void registerPoolLowerings(LoweringTable &table);
void registerReduceLowerings(LoweringTable &table);
void registerSoftmaxLowerings(LoweringTable &table);
void registerRearrangeLowerings(LoweringTable &table);
void registerNormLowerings(LoweringTable &table);
void registerMovementLowerings(LoweringTable &table);
void registerIndexLowerings(LoweringTable &table);
void registerRecurrentLowerings(LoweringTable &table);
void registerCollectiveLowerings(LoweringTable &table);

// Gather / GatherElements whose indices are only known at run time (codelet
// vertices); the data-movement lowering hands over to these.
void lowerDynamicGather(const ir::Op &op, const ir::Graph &g, Lowering &L);
void lowerDynamicGatherElements(const ir::Op &op, const ir::Graph &g, Lowering &L);

// Codelet convolutions: ConvTranspose, and Conv over 1 or 3 spatial dims.
void lowerConvTranspose(const ir::Op &op, const ir::Graph &g, Lowering &L);
void lowerConvNd(const ir::Op &op, const ir::Graph &g, Lowering &L);

// The zero point input `i` of MatMulInteger/ConvInteger, a scalar constant (0
// when absent); anything else is refused (the quantize-decomposition pass
// leaves only these).
int32_t constantZeroPoint(const ir::Op &op, const ir::Graph &g, size_t i);

// Pooling the 2-D kernels do not cover (1-D/3-D, Indices, integer data): codelet.
void lowerPoolNd(const ir::Op &op, const ir::Graph &g, Lowering &L, bool isMax);

// Elementwise building block used by composite lowerings (e.g. BatchNormalization
// with run-time statistics): out = op(inputs...) with numpy broadcasting.
Value lowerElementwise(Lowering &L, const std::string &name, ops::Elementwise op,
                       const std::vector<Value> &inputs, const ir::TensorInfo &outInfo,
                       std::vector<double> params = {});

} // namespace popc::lib
