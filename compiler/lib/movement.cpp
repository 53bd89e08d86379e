// Lowerings of data-movement ops: exchange copies only, no compute. Each
// output element is an input element (or a fill value) at an index known at
// compile time (ir::IndexMap); contiguous source runs become single copies.
// Ops whose outputs depend only on shapes or constants (Shape, Size,
// ConstantOfShape, Range, EyeLike) become constant tensors.
#include "compiler/lib/movement.h"

#include "compiler/ir/host_eval.h"
#include "compiler/ir/index_map.h"
#include "compiler/ir/op_registry.h"
#include "compiler/lib/ops.h"
#include "support/error.h"

#include <algorithm>

namespace popc::lib {

namespace {

// Output elements taken from consecutive source elements, or a fill run.
struct Segment {
  int64_t src = ir::kFill; // first source element, or kFill
  uint64_t count = 0;
};

std::vector<Segment> segmentsOf(const ir::IndexMap &map, uint64_t begin, uint64_t end) {
  std::vector<Segment> segs;
  ir::forEachSource(map, begin, end, [&](int64_t src) {
    if (!segs.empty()) {
      Segment &last = segs.back();
      const bool extends = src == ir::kFill ? last.src == ir::kFill
                                            : last.src != ir::kFill && src == last.src + int64_t(last.count);
      if (extends) {
        ++last.count;
        return;
      }
    }
    segs.push_back({src, 1});
  });
  return segs;
}

// Longest fill run a constant fill tensor serves with one copy.
constexpr uint64_t kMaxFillElems = 4096;

void lowerOutput(const ir::Op &op, const ir::Graph &g, Lowering &L, OpBuilder &b, const std::string &name,
                 const ir::IndexMap &map) {
  const ir::TensorInfo &info = g.tensor(name).info;
  const uint64_t es = dtypeSize(info.dtype);
  Value out = L.newValue(name, info);
  L.mapLinearly(out);
  L.bind(name, out);
  const Value in = L.value(op.inputs[map.input]);
  // Segments per output interval (tile), and the longest fill run.
  std::vector<std::pair<graph::Interval, std::vector<Segment>>> parts;
  uint64_t longestFill = 0;
  for (const graph::Interval &iv : L.graph.tensor(out.tensor).mapping) {
    parts.push_back({iv, segmentsOf(map, iv.begin / es, iv.end / es)});
    for (const Segment &s : parts.back().second)
      if (s.src == ir::kFill)
        longestFill = std::max(longestFill, s.count);
  }
  // Fill source: a constant holding the fill value repeated (one copy per
  // run), or element 0 of a run-time input (one copy per element).
  graph::TensorId fillTensor = 0;
  uint64_t fillElems = 1;
  if (longestFill > 0) {
    if (map.fillInput) {
      fillTensor = L.value(op.inputs[*map.fillInput]).tensor;
    } else {
      POPC_ASSERT(map.fillBytes.size() == es);
      fillElems = std::min(longestFill, kMaxFillElems);
      Value fill = L.newValue(name + "/fill", {info.dtype, {int64_t(fillElems)}}, graph::TensorRole::Constant);
      auto &data = L.graph.tensor(fill.tensor).constData;
      for (uint64_t i = 0; i < fillElems; ++i)
        data.insert(data.end(), map.fillBytes.begin(), map.fillBytes.end());
      L.mapLinearly(fill);
      fillTensor = fill.tensor;
    }
  }
  auto &copies = L.graph.exchange(b.preExchange()).copies;
  for (const auto &[iv, segs] : parts) {
    uint64_t dst = iv.begin;
    for (const Segment &s : segs) {
      if (s.src != ir::kFill) {
        copies.push_back({in.tensor, uint64_t(s.src) * es, out.tensor, dst, s.count * es});
        dst += s.count * es;
        continue;
      }
      for (uint64_t done = 0; done < s.count;) {
        const uint64_t n = std::min(s.count - done, fillElems);
        copies.push_back({fillTensor, 0, out.tensor, dst, n * es});
        dst += n * es;
        done += n;
      }
    }
    POPC_ASSERT(dst == iv.end);
  }
}

void lowerMovement(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  if (lowerIndexMap(op, g, L))
    return;
  // Indices known only at run time: codelet vertices read them on the device.
  if (op.type == "Gather")
    return lowerDynamicGather(op, g, L);
  if (op.type == "GatherElements")
    return lowerDynamicGatherElements(op, g, L);
  // ReverseSequence has no run-time path: its lengths can be frozen instead.
  const std::string lens = op.inputs.size() > 1 ? op.inputs[1] : "";
  if (op.type == "ReverseSequence" && g.hasTensor(lens) && g.tensor(lens).kind == ir::TensorKind::Input)
    throw Error(fmt::format("{}: sequence_lens (input 1 '{}') is only known at run time; popc needs it at compile "
                            "time: give its value with --freeze-input {}=FILE.npy",
                            ir::describeOp(op), lens, lens),
                lens);
  fail("{}: input 1 '{}' is only known at run time; popc lowers {} with compile-time (constant) indices "
       "only for now",
       ir::describeOp(op), op.inputs.size() > 1 ? op.inputs[1] : "", op.type);
}

// Outputs that depend only on shapes and constants: evaluated here (the
// constant folding pass normally did it already).
void lowerFolded(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  std::vector<ir::Tensor> values;
  values.reserve(op.inputs.size());
  std::vector<const ir::Tensor *> inputs;
  for (const std::string &in : op.inputs) {
    if (in.empty()) {
      inputs.push_back(nullptr);
    } else if (ir::hostEvalNeedsOnlyInfo(op.type)) {
      inputs.push_back(&g.tensor(in));
    } else {
      auto v = ir::constantValue(g, in);
      if (!v)
        fail("{}: input '{}' depends on run-time data; popc needs static shapes", ir::describeOp(op), in);
      values.push_back(std::move(*v));
      inputs.push_back(&values.back());
    }
  }
  std::vector<ir::TensorInfo> infos;
  for (const std::string &out : op.outputs)
    infos.push_back(out.empty() ? ir::TensorInfo{} : g.tensor(out).info);
  auto r = ir::hostEvaluate(op, g, inputs, infos);
  if (!r)
    fail("{}: cannot be evaluated at compile time", ir::describeOp(op));
  for (size_t k = 0; k < op.outputs.size(); ++k) {
    if (op.outputs[k].empty())
      continue;
    Value v = L.newValue(op.outputs[k], infos[k], graph::TensorRole::Constant);
    L.graph.tensor(v.tensor).constData = (*r)[k];
    L.mapLinearly(v);
    L.bind(op.outputs[k], v);
  }
}

} // namespace

bool lowerIndexMap(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const ir::MovementResult res = ir::resolveMovement(op, g, true);
  if (!res.maps)
    return false;
  OpBuilder b(L, op.name);
  for (size_t k = 0; k < op.outputs.size(); ++k)
    if (!op.outputs[k].empty())
      lowerOutput(op, g, L, b, op.outputs[k], (*res.maps)[k]);
  return true;
}

void registerMovementLowerings(LoweringTable &t) {
  for (const char *op : {"Slice", "Split", "Pad", "Tile", "Expand", "Gather", "GatherElements", "GatherND",
                         "DepthToSpace", "SpaceToDepth", "Trilu", "Compress", "ReverseSequence", "Resize",
                         "Upsample"})
    t[op] = lowerMovement;
  for (const char *op : {"Shape", "Size", "ConstantOfShape", "Range", "EyeLike"})
    t[op] = lowerFolded;
}

} // namespace popc::lib
