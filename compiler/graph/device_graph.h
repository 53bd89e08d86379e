// The device-level graph (Poplar's Graph): tensors whose every byte is mapped
// to a tile, compute sets of vertices whose fields are byte ranges on their own
// tile, exchange steps (copies between tiles), host streams and a program tree.
//
// Addresses are symbolic here: a field or copy names a tensor and a byte
// position; the memory planner (memory_plan.h) later gives every (tensor,
// tile) block an offset in that tile's memory, and serialize.h resolves them.
#pragma once
#include "compiler/graph/target.h"
#include "support/dtype.h"
#include "support/error.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <deque>
#include <iterator>
#include <vector>

namespace popc::graph {

using TensorId = uint32_t;

// The largest tensor a device graph holds: byte offsets within a tensor are
// 32-bit (a copy is 20 bytes). One IPU has 0.9 GiB of tile memory, so only a
// tensor spread over five or more IPUs could be larger.
constexpr uint64_t kMaxTensorBytes = UINT32_MAX;

enum class TensorRole : uint8_t { Input = 0, Output = 1, Constant = 2, Intermediate = 3 }; // = popef

// Bytes [begin, end) of a tensor live on `tile`.
struct Interval {
  uint64_t begin = 0, end = 0;
  uint32_t tile = 0;
  uint64_t size() const { return end - begin; }
};

// A tensor's bytes on one tile form one contiguous "block" in that tile's
// memory: its intervals on that tile, concatenated in tensor order.
struct DeviceTensor {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  TensorRole role = TensorRole::Intermediate;
  uint64_t bytes = 0;
  std::vector<Interval> mapping; // sorted by begin, covers [0, bytes) exactly once
  std::vector<uint64_t> blockOffsets; // per interval: its offset inside its tile block
  std::vector<uint8_t> constData;
  // Where constData's bytes went if they were spilled (constant_spill.h).
  std::span<const uint8_t> spilled;
  std::span<const uint8_t> constantBytes() const { return constData.empty() ? spilled : std::span(constData); }
  bool persistent = false; // keeps its bytes for the whole program and between runs (graph API variables)
  // A constant laid out in its consumer's layout (Poplar's createWeights): no
  // bytes of its own in the executable, filled once at load by the `load`
  // program's exchanges from the constants it was gathered from.
  bool filledAtLoad = false;
  // A lowering's per-tile temporary ("<op>/<what>@<tile>#<id>": a gathered
  // operand, a laid-out weight). Never named by a stream, program or check;
  // the popef writer stores one tensor per "<op>/<what>" for all of them.
  bool tileTemporary = false;
};

// A vertex field: `bytes` bytes at `blockOffset` inside tensor's block on `tile`.
struct FieldRef {
  TensorId tensor = 0;
  uint32_t tile = 0;
  uint64_t blockOffset = 0;
  uint64_t bytes = 0;
};

struct Vertex {
  uint32_t type = 0; // codegen vertex type index
  uint32_t tile = 0;
  std::vector<FieldRef> fields;
};

struct ComputeSet {
  std::string name;
  std::vector<Vertex> vertices;
};

// Copies bytes [srcByte, srcByte+bytes) of src to dst starting at dstByte,
// whatever tiles they live on (split at interval boundaries when resolved).
struct Copy {
  Copy() = default;
  // In this order (as the fields once were): {src, srcByte, dst, dstByte, bytes}.
  Copy(TensorId src, uint64_t srcByte, TensorId dst, uint64_t dstByte, uint64_t bytes)
      : src(src), dst(dst), srcByte(uint32_t(srcByte)), dstByte(uint32_t(dstByte)), bytes(uint32_t(bytes)) {
    POPC_ASSERT(srcByte + bytes <= kMaxTensorBytes && dstByte + bytes <= kMaxTensorBytes);
  }
  // Byte offsets within a tensor fit 32 bits (addTensor refuses larger
  // tensors): 20 bytes a copy, not 32. Large models hold tens of millions of
  // copies while they are lowered (ViT-B/16: 28 M).
  TensorId src = 0;
  TensorId dst = 0;
  uint32_t srcByte = 0;
  uint32_t dstByte = 0;
  uint32_t bytes = 0;
};
static_assert(sizeof(Copy) == 20);

// An exchange step's copies, in the order they were added, stored as runs:
// a copy that continues the last run's source and destination strides (same
// tensors, same size) extends that run instead of taking a record. Lowerings
// gather rows, columns and channels one copy at a time, so nearly every copy
// does (ViT-B/16: 35.8 M copies in 1.26 M runs; a copy record per copy was
// the compiler's largest structure). Iterating yields every copy, in order.
class CopyList {
public:
  struct Run {
    Copy first;
    uint32_t repeat = 0; // copies after the first
    // Byte steps between consecutive copies, modulo 2^32: a run may go
    // backwards, and every copy's offsets are 32-bit, so the sums reproduce them.
    uint32_t srcStride = 0, dstStride = 0;
    Copy at(uint32_t k) const {
      Copy c = first;
      c.srcByte = first.srcByte + k * srcStride;
      c.dstByte = first.dstByte + k * dstStride;
      return c;
    }
  };
  static_assert(sizeof(Run) == 32);

  class const_iterator {
  public:
    using iterator_category = std::input_iterator_tag; // yields copies by value
    using value_type = Copy;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Copy;
    const_iterator() = default;
    const_iterator(const Run *run, uint32_t k) : run_(run), k_(k) {}
    Copy operator*() const { return run_->at(k_); }
    const_iterator &operator++() {
      if (k_ < run_->repeat)
        ++k_;
      else
        ++run_, k_ = 0;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++*this;
      return before;
    }
    bool operator==(const const_iterator &o) const { return run_ == o.run_ && k_ == o.k_; }
    bool operator!=(const const_iterator &o) const { return !(*this == o); }

  private:
    const Run *run_ = nullptr;
    uint32_t k_ = 0;
  };

  void push_back(const Copy &c) {
    ++count_;
    if (!runs_.empty()) {
      Run &r = runs_.back();
      if (r.first.src == c.src && r.first.dst == c.dst && r.first.bytes == c.bytes && r.repeat < UINT32_MAX) {
        if (r.repeat == 0) {
          r.srcStride = c.srcByte - r.first.srcByte;
          r.dstStride = c.dstByte - r.first.dstByte;
          r.repeat = 1;
          return;
        }
        const Copy next = r.at(r.repeat + 1);
        if (next.srcByte == c.srcByte && next.dstByte == c.dstByte) {
          ++r.repeat;
          return;
        }
      }
    }
    runs_.push_back({c, 0, 0, 0});
  }
  template <typename... Args> void emplace_back(Args &&...args) { push_back(Copy(std::forward<Args>(args)...)); }

  uint64_t size() const { return count_; } // copies, not runs
  bool empty() const { return count_ == 0; }
  const_iterator begin() const { return {runs_.data(), 0}; }
  const_iterator end() const { return {runs_.data() + runs_.size(), 0}; }
  const std::vector<Run> &runs() const { return runs_; }
  uint64_t memoryBytes() const { return runs_.capacity() * sizeof(Run); }
  void shrink_to_fit() { runs_.shrink_to_fit(); }
  void release() { // frees the records
    std::vector<Run>().swap(runs_);
    count_ = 0;
  }

private:
  std::vector<Run> runs_;
  uint64_t count_ = 0;
};

struct ExchangeStep {
  std::string name;
  CopyList copies;
  // >= 0: every replica reads the sources on replica `fromReplica` (popef from_replica).
  int32_t fromReplica = -1;
};

enum class StreamDirection : uint8_t { HostToDevice = 0, DeviceToHost = 1 };

struct HostStream {
  std::string name;
  TensorId tensor = 0;
  StreamDirection direction = StreamDirection::HostToDevice;
  // Outputs only: transfer on executions k with (k / group) % every == every - 1
  // (anchor return types, docs/multi-ipu.md); popef HostStream.every/group.
  uint32_t every = 1, group = 1;
};

enum class ProgramKind : uint8_t { Sequence = 0, Execute, Exchange, StreamCopy, Repeat, Call, Sync,
                                   If, RepeatWhileTrue, Switch, PrintTensor }; // = popef

struct Program {
  ProgramKind kind = ProgramKind::Sequence;
  uint32_t index = 0; // compute set / exchange / stream / function
  uint32_t count = 0; // Repeat
  std::string name;
  std::vector<Program> children;
  TensorId tensor = 0;              // If, RepeatWhileTrue, Switch (scalar), PrintTensor
  std::vector<int64_t> caseValues;  // Switch: one per case child (the last child is the default)
  bool parallel = false; // Sequence of per-IPU work running at once (pipeline cycle)
  int32_t ipu = -1;      // child of a parallel Sequence: the IPU it runs on (same IPU: one after another)

  static Program sequence(std::string name = {}) { return {ProgramKind::Sequence, 0, 0, std::move(name), {}, 0, {}}; }
  static Program execute(uint32_t cs) { return {ProgramKind::Execute, cs, 0, {}, {}, 0, {}}; }
  static Program exchange(uint32_t ex) { return {ProgramKind::Exchange, ex, 0, {}, {}, 0, {}}; }
  static Program streamCopy(uint32_t s) { return {ProgramKind::StreamCopy, s, 0, {}, {}, 0, {}}; }
  static Program sync() { return {ProgramKind::Sync, 0, 0, {}, {}, 0, {}}; }
};

struct IoInfo {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  TensorId tensor = 0;
  uint32_t stream = 0;
  Shape hostShape;    // whole step on the host (empty = shape)
  std::string anchor; // outputs: ALL | EVERYN:k | FINAL | SUM
};

// Tiles mapLinearly uses for `elems` elements (same rule, for planning ahead).
uint32_t linearTileCount(uint64_t elems, uint32_t numTiles, uint64_t grainElems, uint64_t minElemsPerTile);

class DeviceGraph {
public:
  explicit DeviceGraph(Target target) : target_(std::move(target)) {}
  const Target &target() const { return target_; }

  TensorId addTensor(std::string name, DType dtype, Shape shape, TensorRole role);
  DeviceTensor &tensor(TensorId id) { return tensors_.at(id); }
  const DeviceTensor &tensor(TensorId id) const { return tensors_.at(id); }
  const std::deque<DeviceTensor> &tensors() const { return tensors_; }

  // Mapping. setMapping checks the intervals cover the tensor exactly once.
  void setMapping(TensorId id, std::vector<Interval> mapping);
  // Whole tensor on one tile.
  void mapToTile(TensorId id, uint32_t tile);
  // Spreads elements evenly over `numTiles` tiles starting at `firstTile`, in
  // multiples of `grainElems`, using no more tiles than keeps at least
  // `minElemsPerTile` per tile (Poplar's mapTensorLinearly).
  void mapLinearly(TensorId id, uint32_t firstTile, uint32_t numTiles, uint64_t grainElems,
                   uint64_t minElemsPerTile);
  bool isMapped(TensorId id) const { return !tensors_.at(id).mapping.empty(); }

  // Position of tensor byte `byte` inside its tile block: (tile, blockOffset).
  std::pair<uint32_t, uint64_t> locate(TensorId id, uint64_t byte) const;
  // Size of the tensor's block on each tile it uses, in tile order.
  std::vector<std::pair<uint32_t, uint64_t>> blockSizes(TensorId id) const;

  uint32_t addComputeSet(std::string name);
  ComputeSet &computeSet(uint32_t i) { return computeSets_.at(i); }
  const std::vector<ComputeSet> &computeSets() const { return computeSets_; }

  uint32_t addExchange(std::string name);
  ExchangeStep &exchange(uint32_t i) { return exchanges_.at(i); }
  const std::vector<ExchangeStep> &exchanges() const { return exchanges_; }

  uint32_t addStream(std::string name, TensorId tensor, StreamDirection dir);
  const std::vector<HostStream> &streams() const { return streams_; }

  Program &main() { return main_; }
  const Program &main() const { return main_; }
  // Runs once when the executable is loaded, before any run of `main`:
  // exchanges that lay constants out where their consumers read them.
  Program &load() { return load_; }
  const Program &load() const { return load_; }

  std::vector<IoInfo> inputs, outputs;
  // Device variables (trainable weights, optimizer state): name, type and
  // tensor, so the runner can read and write them (stream unused).
  std::vector<IoInfo> variables;
  // Training: the source ONNX model without its trainable initializers' bytes
  // (popef source_model, for poprun-lite --save-model).
  std::vector<uint8_t> sourceModel;
  // Run-time checks in vertex code (popef Check): after compute set
  // `computeSet`, records [flag, value, position] of int64 in `tensor`; a set
  // flag stops the run with `message` ("{value}", "{position}" filled in).
  struct RunCheck {
    uint32_t computeSet;
    TensorId tensor;
    std::string message;
  };
  std::vector<RunCheck> checks;
  std::string modelName;
  // Step structure (docs/multi-ipu.md); all 1 / 0 for a plain single run.
  uint32_t replicationFactor = 1, batchesPerStep = 1, accumulationFactor = 1, pipelineStages = 0;

private:
  Target target_;
  // A deque: references to tensors stay valid while lowerings add temporaries.
  std::deque<DeviceTensor> tensors_;
  std::vector<ComputeSet> computeSets_;
  std::vector<ExchangeStep> exchanges_;
  std::vector<HostStream> streams_;
public:
  HostStream &stream(uint32_t i) { return streams_.at(i); }
private:
  Program main_ = Program::sequence("main");
  Program load_ = Program::sequence("load");
};

// Calls fn(tensor) for each tensor a compute set or exchange step reads or
// writes (`p` an Execute or Exchange program; other kinds: none): every
// vertex field's tensor, and the source and destination of every run of
// copies (once per run: its copies share both). In stored order; a tensor
// may come more than once. The one walk the liveness of the memory plan,
// the pipeline's cross-stage pinning and auto-shard's costs share.
template <typename Fn> void forEachStepTensor(const DeviceGraph &g, const Program &p, Fn &&fn) {
  if (p.kind == ProgramKind::Execute) {
    for (const Vertex &v : g.computeSets()[p.index].vertices)
      for (const FieldRef &f : v.fields)
        fn(f.tensor);
  } else if (p.kind == ProgramKind::Exchange) {
    for (const CopyList::Run &r : g.exchanges()[p.index].copies.runs()) {
      fn(r.first.src);
      fn(r.first.dst);
    }
  }
}

} // namespace popc::graph
