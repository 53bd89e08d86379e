// Lowers the main IR graph: host streams for the inputs, constants on first
// use, every op through its lowering, then streams for the outputs.
#include "compiler/lib/lowering.h"
#include "compiler/lib/ops.h"
#include "compiler/lib/step.h"

#include "support/error.h"
#include "support/log.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace popc::lib {

namespace {

// One exchange step named `name` copying all of `src` over `dst` (same bytes).
void copyWhole(Lowering &L, const std::string &name, graph::TensorId src, graph::TensorId dst) {
  OpBuilder b(L, name);
  L.graph.exchange(b.preExchange()).copies.push_back({src, 0, dst, 0, L.graph.tensor(dst).bytes});
}

// Whether lowering may move constant `t`'s bytes out of the IR (LowerOptions::
// moveConstantsFrom): a large constant that only weighs convolutions and
// matmuls whose other operands include a value computed at run time. Such an
// op is never evaluated on the host, so no lowering reads the constant's
// values, directly or through a chain of constant ops (as Gather's indices
// and Compress's condition are read).
bool movable(const ir::Tensor &t, const ir::Graph &g) {
  if (t.kind != ir::TensorKind::Constant || t.data.size() < LowerOptions::kMovedConstantBytes ||
      std::find(g.outputs.begin(), g.outputs.end(), t.name) != g.outputs.end())
    return false;
  const std::vector<size_t> consumers = g.consumers(t.name);
  return !consumers.empty() && std::all_of(consumers.begin(), consumers.end(), [&](size_t c) {
    const ir::Op &op = *g.ops()[c];
    static const std::set<std::string> kWeighed = {"Conv", "ConvTranspose", "MatMul", "Gemm"};
    return op.domain.empty() && kWeighed.count(op.type) &&
           std::any_of(op.inputs.begin(), op.inputs.end(),
                       [&](const std::string &in) { return !in.empty() && !ir::hasData(g.tensor(in).kind); });
  });
}

// Constants and variables: bytes written at load. A variable keeps its own
// bytes for good (persistent): updates write them, and no laid-out copy may
// go stale.
void bindConstant(const ir::Tensor &t, Lowering &L, ir::Graph *moveFrom) {
  Value v = L.newValue(t.name, t.info, graph::TensorRole::Constant);
  std::vector<uint8_t> &bytes = L.graph.tensor(v.tensor).constData;
  if (moveFrom && movable(t, *moveFrom)) // a name is bound once
    bytes = std::move(moveFrom->tensor(t.name).data);
  else
    bytes = t.data;
  POPC_ASSERT(bytes.size() == t.info.bytes());
  if (t.kind == ir::TensorKind::Variable) {
    L.graph.tensor(v.tensor).persistent = true;
    L.graph.variables.push_back({t.name, t.info.dtype, t.info.shape, v.tensor, 0, {}, {}});
  }
  L.mapLinearly(v);
  L.bind(t.name, v);
}

// Graph outputs are streamed from a tensor of their own: an intermediate
// becomes the output; inputs, constants or a value streamed twice get a copy.
void streamOutput(const std::string &name, const ir::Graph &g, Lowering &L, ir::Graph *moveFrom,
                  std::set<graph::TensorId> &streamed) {
  auto &dg = L.graph;
  const ir::TensorInfo &info = g.tensor(name).info;
  if (!L.has(name)) {
    if (!ir::hasData(g.tensor(name).kind))
      fail("internal error: graph output '{}' was never computed", name);
    bindConstant(g.tensor(name), L, moveFrom);
  }
  Value v = L.value(name);
  graph::DeviceTensor &t = dg.tensor(v.tensor);
  graph::TensorId outTensor = v.tensor;
  if (t.role == graph::TensorRole::Intermediate && !streamed.count(v.tensor)) {
    t.role = graph::TensorRole::Output;
    t.shape = info.shape;
  } else {
    Value copy = L.newValue(name, info, graph::TensorRole::Output);
    L.mapLike(copy, v);
    copyWhole(L, name + "/copy", v.tensor, copy.tensor);
    outTensor = copy.tensor;
  }
  streamed.insert(outTensor);
  const uint32_t stream = dg.addStream(name, outTensor, graph::StreamDirection::DeviceToHost);
  dg.outputs.push_back({name, info.dtype, info.shape, outTensor, stream, {}, {}});
}

} // namespace

namespace {

// Cuts main's children appended since the last cut into a segment of `stage`.
struct SegmentCutter {
  graph::DeviceGraph &dg;
  std::vector<Segment> segments;
  size_t done = 0;
  void cut(int64_t stage, int64_t ipu = -1) {
    auto &children = dg.main().children;
    if (children.size() == done)
      return;
    Segment s{stage, {children.begin() + done, children.end()}, ipu};
    done = children.size();
    if (!segments.empty() && segments.back().stage == stage && segments.back().ipu == ipu)
      for (auto &p : s.programs)
        segments.back().programs.push_back(std::move(p));
    else
      segments.push_back(std::move(s));
  }
};

// SUM anchor: acc (zeroed in the prologue) += value each micro-batch; the
// stream then reads acc, moving data only on the step's last micro-batch.
Value sumAccumulator(const std::string &name, const Value &v, Lowering &L, SegmentCutter &cut, int64_t stage) {
  auto &dg = L.graph;
  Value acc = L.newValue(name + "/sum", v.info);
  L.mapLike(acc, v);
  Value zeros = L.newValue(name + "/sum/zero", v.info, graph::TensorRole::Constant);
  dg.tensor(zeros.tensor).constData.assign(dg.tensor(v.tensor).bytes, 0);
  dg.setMapping(zeros.tensor, dg.tensor(acc.tensor).mapping);
  cut.cut(stage);
  copyWhole(L, name + "/sum/zero", zeros.tensor, acc.tensor);
  cut.cut(-1);
  Value sum = lowerElementwise(L, name + "/sum/add", ops::Elementwise::Add, {acc, v}, v.info);
  copyWhole(L, name + "/sum/update", sum.tensor, acc.tensor);
  cut.cut(stage);
  return acc;
}

} // namespace

void lowerIr(const ir::Ir &ir, graph::DeviceGraph &dg, codegen::VertexCodegen &codegen) {
  lowerIrSegments(ir, dg, codegen, {});
}

std::vector<Segment> lowerIrSegments(const ir::Ir &ir, graph::DeviceGraph &dg, codegen::VertexCodegen &codegen,
                                     const LowerOptions &options) {
  auto log = log::get("lib");
  Lowering L(dg, codegen);
  L.layoutConstantsAtLoad = true;
  L.indexChecks = options.indexChecks;
  L.halfPartials = ir.halfPartials;
  L.setCurrentIpu(0);
  const ir::Graph &g = ir.main;
  dg.modelName = ir.modelName;
  SegmentCutter cut{dg, {}, 0};
  auto stageOf = [&](const ir::Op &op) {
    if (op.phase == 1)
      return kOptimizerStage;
    return options.pipeline ? std::max<int64_t>(op.pipelineStage, 0) : int64_t(0);
  };
  std::map<std::pair<std::string, int64_t>, Value> forwarded; // (IR value, IPU) -> its copy on that IPU
  // Pipelining: the stage whose programs write each tensor (the first one:
  // a view an op of a later stage binds keeps its writer).
  std::map<graph::TensorId, int64_t> writerStage;
  auto noteWriter = [&](const Value &v, int64_t stage) { writerStage.emplace(v.tensor, stage); };
  // Training pipelines (PopART's stash): a value stage w writes and stage
  // r >= w+2 reads would be overwritten by the micro-batches w runs in
  // between. It moves down a chain of slots on its own IPU instead: slot j,
  // written by stage w+j from slot j-1 (slot 0 is the value), so that in any
  // cycle slot j holds the micro-batch stage w+j works on; stage r reads slot
  // r-w-1. The copies run in stage w+j's turn, as work of the value's IPU.
  std::map<graph::TensorId, std::vector<graph::TensorId>> stashSlots;
  auto stashedRead = [&](const Value &v, int64_t reader) -> std::optional<Value> {
    const graph::DeviceTensor &t = dg.tensor(v.tensor);
    auto w = writerStage.find(v.tensor);
    if (t.role == graph::TensorRole::Constant || t.mapping.empty() || w == writerStage.end() || reader - w->second < 2)
      return std::nullopt;
    const int64_t writer = w->second, ipu = t.mapping.front().tile / dg.target().tilesPerIpu;
    const graph::TensorId source = v.tensor;
    auto &slots = stashSlots[source];
    while (int64_t(slots.size()) < reader - writer - 1) {
      const int64_t stage = writer + 1 + int64_t(slots.size());
      const graph::DeviceTensor &src = dg.tensor(source);
      Value slot = L.newValue(fmt::format("{}/stash{}", src.name, stage), {src.dtype, src.shape});
      dg.setMapping(slot.tensor, dg.tensor(source).mapping);
      copyWhole(L, dg.tensor(slot.tensor).name, slots.empty() ? source : slots.back(), slot.tensor);
      cut.cut(stage, ipu);
      noteWriter(slot, stage);
      slots.push_back(slot.tensor);
    }
    return Value{slots[reader - writer - 2], v.info};
  };
  // A variable updated every micro-batch (an accumulator, running statistics,
  // a Dropout counter): its update runs in the stage that computes the new
  // value. A later stage works on an older micro-batch, so it reads a snapshot
  // the updating stage takes before the update, moved along like any value of
  // that stage. An earlier stage cannot: it is refused.
  std::map<std::string, const ir::Op *> updatedBy; // variable -> the op computing its per-micro-batch update
  if (options.trainingPipeline)
    for (const ir::VariableUpdate &u : g.updates)
      if (auto p = g.producer(u.value); u.phase == 0 && p)
        updatedBy.emplace(u.variable, g.ops()[*p].get());
  std::map<std::string, Value> snapshots;
  auto snapshotFor = [&](const std::string &variable, const ir::Op &reader) -> std::optional<Value> {
    auto it = updatedBy.find(variable);
    if (it == updatedBy.end() || stageOf(reader) <= stageOf(*it->second))
      return std::nullopt;
    if (!snapshots.count(variable)) {
      const Value &v = L.value(variable);
      L.setCurrentIpu(it->second->ipu); // on the updating stage's IPU, which writes it
      Value snap = L.newValue(variable + "/snapshot", v.info);
      L.mapLinearly(snap);
      copyWhole(L, variable + "/snapshot", v.tensor, snap.tensor);
      L.setCurrentIpu(reader.ipu);
      cut.cut(stageOf(*it->second));
      noteWriter(snap, stageOf(*it->second));
      snapshots.emplace(variable, snap);
    }
    return snapshots.at(variable);
  };
  auto pipelinedUpdateStage = [&](const ir::VariableUpdate &u, int64_t stage) {
    for (size_t c : g.consumers(u.variable))
      if (const ir::Op &op = *g.ops()[c]; op.phase == 0 && stageOf(op) < stage)
        fail("--pipeline: variable '{}' is updated every micro-batch in pipeline stage {} but read by {} '{}' in the "
             "earlier stage {}, which works on a later micro-batch: compute its update in its first reader's stage",
             u.variable, stage, op.type, op.name, stageOf(op));
    return stage;
  };
  // Variable updates (a training step's new weights and optimizer state): after
  // every op of their phase has read the old values, each new value is copied
  // over its variable. Copies of variables on other IPUs made before hold the
  // old values: later readers make new ones.
  auto lowerUpdates = [&](int64_t phase) {
    std::erase_if(forwarded, [&](const auto &entry) {
      return g.hasTensor(entry.first.first) && g.tensor(entry.first.first).kind == ir::TensorKind::Variable;
    });
    bool any = false;
    for (const ir::VariableUpdate &u : g.updates) {
      if (u.phase != phase)
        continue;
      for (const std::string &name : {u.variable, u.value})
        if (!L.has(name))
          bindConstant(g.tensor(name), L, options.moveConstantsFrom);
      const Value &var = L.value(u.variable), &value = L.value(u.value);
      copyWhole(L, u.variable + "/update", value.tensor, var.tensor);
      any = true;
      if (options.trainingPipeline && phase == 0) // each micro-batch's update runs in the stage computing it
        cut.cut(pipelinedUpdateStage(u, writerStage.count(value.tensor) ? writerStage.at(value.tensor) : 0));
    }
    if (any)
      cut.cut(phase == 1 ? kOptimizerStage : 0);
  };
  bool microUpdatesDone = false;
  // Pipelining: each stage's IPU (one per stage, assignPipelineStages checks).
  std::map<int64_t, int64_t> stageOfIpu, ipuOfStage;
  if (options.pipeline)
    for (const auto &op : g.ops()) {
      stageOfIpu.emplace(op->ipu, stageOf(*op));
      ipuOfStage.emplace(stageOf(*op), op->ipu);
    }
  // Where a graph input or output lives: with the op that consumes or produces
  // it, so a sharded model sends no tensor over the links twice.
  auto firstConsumer = [&](const std::string &name) -> const ir::Op * {
    auto c = g.consumers(name);
    return c.empty() ? nullptr : g.ops()[c.front()].get();
  };
  auto producerOf = [&](const std::string &name) -> const ir::Op * {
    auto p = g.producer(name);
    if (p)
      return g.ops()[*p].get();
    return firstConsumer(name);
  };

  for (const std::string &name : g.inputs) {
    const ir::Tensor &t = g.tensor(name);
    const ir::Op *user = firstConsumer(name);
    try {
      L.setCurrentIpu(user ? user->ipu : 0);
    } catch (const Error &e) {
      fail("{} '{}': {}", user->type, user->name, e.what());
    }
    Value v = L.newValue(name, t.info, graph::TensorRole::Input);
    L.mapLinearly(v);
    const uint32_t stream = dg.addStream(name, v.tensor, graph::StreamDirection::HostToDevice);
    dg.main().children.push_back(graph::Program::streamCopy(stream));
    dg.inputs.push_back({name, t.info.dtype, t.info.shape, v.tensor, stream, {}, {}});
    L.bind(name, v);
    noteWriter(v, user ? stageOf(*user) : 0);
    cut.cut(user ? stageOf(*user) : 0);
  }

  for (const auto &op : g.ops()) {
    // Outputs already bound: the op was fused into its producer's lowering.
    if (std::all_of(op->outputs.begin(), op->outputs.end(), [&](const std::string &o) { return o.empty() || L.has(o); }))
      continue;
    try {
      L.setCurrentIpu(op->ipu);
    } catch (const Error &e) {
      fail("{} '{}': {}", op->type, op->name, e.what());
    }
    for (const std::string &in : op->inputs)
      if (!in.empty() && !L.has(in)) {
        const ir::Tensor &t = g.tensor(in);
        if (!ir::hasData(t.kind))
          fail("internal error: op '{}' reads '{}' before it is defined", op->name, in);
        bindConstant(t, L, options.moveConstantsFrom);
      }
    if (op->phase == 1 && !microUpdatesDone) {
      L.setCurrentIpu(0);
      lowerUpdates(0);
      microUpdatesDone = true;
      L.setCurrentIpu(op->ipu);
    }
    const LowerFn *lower = findLowering(op->type);
    if (!lower)
      fail("{} '{}': no device lowering for this operator yet", op->type, op->name);
    // Variables updated every micro-batch, read by a later stage: the snapshot.
    std::map<std::string, Value> originals;
    if (options.trainingPipeline && op->phase == 0)
      for (const std::string &in : op->inputs)
        if (!in.empty() && !originals.count(in))
          if (auto snap = snapshotFor(in, *op)) {
            originals.emplace(in, L.value(in));
            L.bind(in, *snap);
          }
    // Operands on another IPU cross the links once, whole, into a copy on this
    // op's IPU (PopART's IpuCopy) that the lowering then spreads over its
    // tiles by on-IPU exchange; constants get their own copy per IPU. When
    // pipelining, a value from two or more stages back is forwarded stage by
    // stage (PopART stashes it): a stage reads only its own and the previous
    // stage's IPU.
    std::set<std::string> crossed;
    if (dg.target().numIpus > 1)
      for (const std::string &op_in : op->inputs)
        if (!op_in.empty() && crossed.insert(op_in).second) {
          // (a snapshot travels under a name of its own)
          const std::string in = originals.count(op_in) ? op_in + "/snapshot" : op_in;
          const Value v = L.value(op_in);
          const auto &t = dg.tensor(v.tensor);
          const uint32_t tpi = dg.target().tilesPerIpu;
          if (t.mapping.empty() || v.info.bytes() != t.bytes) // (partial views: gathered as they are)
            continue;
          const int64_t fromIpu = t.mapping.front().tile / tpi;
          if (fromIpu == op->ipu || std::any_of(t.mapping.begin(), t.mapping.end(), [&](const graph::Interval &iv) {
                return int64_t(iv.tile / tpi) != fromIpu;
              }))
            continue;
          cut.cut(stageOf(*op));
          Value cur = v;
          if (t.role == graph::TensorRole::Constant && !t.persistent) { // (a variable's copy would go stale)
            auto key = std::pair(in, op->ipu + (int64_t(1) << 32));
            if (!forwarded.count(key)) {
              Value c = L.newValue(fmt::format("{}/ipu{}", in, op->ipu), v.info, graph::TensorRole::Constant);
              dg.tensor(c.tensor).constData = t.constData;
              L.setCurrentIpu(op->ipu);
              L.mapLinearly(c);
              forwarded.emplace(key, c);
            }
            cur = forwarded.at(key);
          } else {
            // The hops: through each stage in between when pipelining, then here.
            std::vector<std::pair<int64_t, std::string>> hops; // (IPU, name)
            const int64_t from = writerStage.count(v.tensor)   ? writerStage.at(v.tensor)
                                 : stageOfIpu.count(fromIpu) ? stageOfIpu.at(fromIpu)
                                                             : stageOf(*op);
            if (options.pipeline)
              for (int64_t k = from + 1; k < stageOf(*op); ++k)
                hops.push_back({ipuOfStage.at(k), fmt::format("{}/stash{}", in, k)});
            hops.push_back({op->ipu, fmt::format("{}/ipucopy{}", in, op->ipu)});
            for (size_t h = 0; h < hops.size(); ++h) {
              const auto [ipu, name] = hops[h];
              auto key = std::pair(in, ipu);
              if (!forwarded.count(key)) {
                L.setCurrentIpu(ipu);
                Value next = L.newValue(name, v.info);
                L.mapLinearly(next);
                copyWhole(L, name, cur.tensor, next.tensor);
                const int64_t stage = h + 1 < hops.size() ? from + 1 + int64_t(h) : stageOf(*op);
                cut.cut(stage);
                noteWriter(next, stage);
                forwarded.emplace(key, next);
              }
              cur = forwarded.at(key);
            }
          }
          originals.emplace(op_in, v); // (keeps a snapshot's variable)
          L.bind(op_in, cur);
        }
    if (options.trainingPipeline && op->phase == 0) {
      cut.cut(stageOf(*op));
      for (const std::string &in : op->inputs)
        if (!in.empty())
          if (auto stashed = stashedRead(L.value(in), stageOf(*op))) {
            originals.emplace(in, L.value(in)); // (keeps a forwarded value's original)
            L.bind(in, *stashed);
          }
    }
    L.setCurrentIpu(op->ipu);
    log->debug("lowering {} '{}'", op->type, op->name);
    (*lower)(*op, g, L);
    for (const auto &[name, v] : originals)
      L.bind(name, v);
    for (const std::string &out : op->outputs)
      if (!out.empty() && L.has(out))
        noteWriter(L.value(out), stageOf(*op));
    cut.cut(stageOf(*op));
  }

  L.setCurrentIpu(0);
  if (!microUpdatesDone)
    lowerUpdates(0);
  lowerUpdates(1);

  std::set<graph::TensorId> streamed;
  std::vector<int64_t> outputStages;
  for (const std::string &name : g.outputs) {
    const ir::Op *producer = producerOf(name);
    L.setCurrentIpu(producer ? producer->ipu : 0);
    const int64_t stage = producer ? stageOf(*producer) : 0;
    auto anchor = options.anchors.find(name);
    if (anchor != options.anchors.end() && anchor->second.kind == Anchor::Kind::Sum && options.iterations > 1) {
      if (!L.has(name))
        bindConstant(g.tensor(name), L, options.moveConstantsFrom); // a constant output sums like any other
      {
        Value acc = sumAccumulator(name, L.value(name), L, cut, stage);
        graph::DeviceTensor &t = dg.tensor(acc.tensor);
        t.role = graph::TensorRole::Output;
        streamed.insert(acc.tensor);
        const uint32_t stream = dg.addStream(name, acc.tensor, graph::StreamDirection::DeviceToHost);
        const ir::TensorInfo &info = g.tensor(name).info;
        dg.outputs.push_back({name, info.dtype, info.shape, acc.tensor, stream, {}, {}});
      }
    } else {
      streamOutput(name, g, L, options.moveConstantsFrom, streamed);
    }
    cut.cut(stage);
    outputStages.push_back(stage);
  }
  L.setCurrentIpu(0);
  for (size_t i = 0; i < dg.outputs.size(); ++i) {
    dg.main().children.push_back(graph::Program::streamCopy(dg.outputs[i].stream));
    cut.cut(outputStages[i]);
  }
  return std::move(cut.segments);
}

} // namespace popc::lib
