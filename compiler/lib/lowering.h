// Lowering context shared by every op lowering (compiler/lib/*.cpp), in the
// spirit of Poplibs: each lowering maps its outputs to tiles, brings operands
// to the tiles that use them (exchange), and adds shape-specialised vertices.
#pragma once
#include "compiler/codegen/kernels.h"
#include "compiler/graph/device_graph.h"
#include "compiler/ir/ir.h"
#include "compiler/lib/laid_out_table.h"
#include "compiler/lib/runs.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace popc::lib {

// An IR value on the device: a device tensor seen with a logical shape. Views
// (Reshape, Flatten, ...) share the tensor and change only the shape.
struct Value {
  graph::TensorId tensor = 0;
  ir::TensorInfo info;
  size_t elemSize() const { return dtypeSize(info.dtype); }
};

class Lowering;

// Builds the program of one op: an exchange bringing operands in, one compute
// set, and an exchange moving results out; empty parts are not emitted.
class OpBuilder {
public:
  OpBuilder(Lowering &lowering, std::string name);
  ~OpBuilder(); // appends the op's programs to the main sequence

  Lowering &lowering;
  const std::string name;

  uint32_t preExchange();
  uint32_t postExchange();
  void addVertex(const codegen::KernelSpec &spec, uint32_t tile, std::vector<graph::FieldRef> fields);
  // A run-time check of this op's compute set (after a vertex is added):
  // `status` holds the vertices' [flag, value, position] records.
  void addCheck(graph::TensorId status, std::string message);

  // A field on `tile` holding the concatenation of `runs` of `src`. Binds the
  // source directly when those bytes already sit contiguously on the tile;
  // otherwise creates a temporary on the tile filled by the pre-exchange.
  graph::FieldRef gather(graph::TensorId src, const RunList &runs, uint32_t tile, const std::string &what);
  // The same bytes always in a temporary of their own on the tile (filled by
  // the pre-exchange), never bound in place or shared with another gather.
  graph::FieldRef gatherCopy(graph::TensorId src, const RunList &runs, uint32_t tile, const std::string &what);
  // Field for a temporary output on `tile` whose bytes the post-exchange then
  // scatters to `runs` of `dst`.
  graph::FieldRef scatter(graph::TensorId dst, const RunList &runs, uint32_t tile, const std::string &what);

private:
  graph::FieldRef tileTemporary(graph::TensorId t, const RunList &runs, uint32_t tile, const std::string &what,
                                bool incoming, bool reuse = true);
  // The gathered runs of a constant as a constant of their own on `tile`,
  // filled once at load; nullopt when the tile's budget for them is spent.
  std::optional<graph::FieldRef> constantLaidOut(graph::TensorId t, const RunList &runs, uint32_t tile,
                                                 const std::string &what);
  std::optional<uint32_t> pre_, cs_, post_, load_;
};

class Lowering {
public:
  Lowering(graph::DeviceGraph &graph, codegen::VertexCodegen &codegen)
      : graph(graph), codegen(codegen) {}

  graph::DeviceGraph &graph;
  codegen::VertexCodegen &codegen;

  const Value &value(const std::string &irName) const;
  void bind(const std::string &irName, Value v) { values_[irName] = std::move(v); }
  bool has(const std::string &irName) const { return values_.count(irName) != 0; }

  // A fresh device tensor for an IR value (unmapped).
  Value newValue(const std::string &name, const ir::TensorInfo &info,
                 graph::TensorRole role = graph::TensorRole::Intermediate);
  // Maps `v` over the op's tiles linearly (grain and minimum per tile chosen here).
  void mapLinearly(const Value &v, uint64_t grainElems = 1);
  // Same mapping as `like` (same byte size), or linear if sizes differ.
  void mapLike(const Value &v, const Value &like);

  // Tiles the current op may use (its IPU).
  uint32_t firstTile() const { return firstTile_; }
  uint32_t numTiles() const { return numTiles_; }
  // First of `count` consecutive tiles of the current IPU for the next tensor
  // or plan. A cursor rotates through the IPU so that many small ops (and
  // their constants) spread over the tiles instead of piling onto tile 0.
  uint32_t allocTiles(uint64_t count);
  void setCurrentIpu(int64_t ipu);

  uint32_t workers() const { return graph.target().workersPerTile; }

  // Poplar's createWeights: a constant operand an op gathers onto a tile is
  // laid out there once at load (the `load` program) instead of travelling on
  // every run, while the tile's bytes of such copies stay within
  // kLoadLayoutShare of its memory. Off for the graph API, whose "constants"
  // may be variables with initial values that programs change.
  bool layoutConstantsAtLoad = false;
  // Gather with run-time indices reports an index outside its axis (popc-onnx
  // --no-index-checks turns it off: such an index then reads zeros).
  bool indexChecks = true;
  // float16 MatMul/Gemm/Conv accumulate in float16 (popc-onnx --partials-type
  // half; otherwise the float16-promotion pass gives them float32 partials).
  bool halfPartials = false;
  static constexpr double kLoadLayoutShare = 0.3;
  // Bytes of laid-out constants on `tile` so far; `reserve` adds to it if they fit.
  bool reserveLoadLayout(uint32_t tile, uint64_t bytes);
  // Whether a plan that gathers `tileBytes` of constant `v` onto a tile, `totalBytes`
  // over all its tiles, will likely have them laid out at load (no per-run
  // exchange). The tiles' average budget must have room, and the plan may use no
  // more of the whole budget than v's share of all the constants: so early layers
  // cannot replicate their weights so widely that later layers' weights travel.
  // Planners use it to leave such gathers out of a plan's per-run cost.
  bool likelyLaidOutAtLoad(const Value &v, uint64_t tileBytes, uint64_t totalBytes) const;
  // Laid-out constants already made, per source tensor (laid_out_table.h).
  std::unordered_map<graph::TensorId, LaidOutTable> laidOutConstants;

private:
  std::vector<uint64_t> loadLayoutBytes_; // by tile
  uint64_t loadLayoutTotal_ = 0;
  mutable uint64_t constantBytes_ = 0; // all constants' bytes, counted at the first plan
  std::map<std::string, Value> values_;
  uint32_t firstTile_ = 0, numTiles_ = 0;
  int64_t ipu_ = 0;
  std::map<int64_t, uint32_t> cursor_; // per IPU: next tile offset
};

using LowerFn = std::function<void(const ir::Op &, const ir::Graph &, Lowering &)>;
// Op type → lowering; nullptr if the op has none.
const LowerFn *findLowering(const std::string &opType);
std::vector<std::string> loweredOpTypes();

// Lowers the whole main graph: host streams for inputs/outputs, constants,
// every op in order. Returns nothing; fills `graph`.
void lowerIr(const ir::Ir &ir, graph::DeviceGraph &graph, codegen::VertexCodegen &codegen);

// Splits `n` items into at most `parts` contiguous chunks of at least `minChunk`
// items (the last may be smaller): returns chunk begin offsets plus n.
std::vector<uint64_t> splitEvenly(uint64_t n, uint64_t parts, uint64_t minChunk = 1);

} // namespace popc::lib
