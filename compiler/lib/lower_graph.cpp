// Lowers the main IR graph: host streams for the inputs, constants on first
// use, every op through its lowering, then streams for the outputs.
#include "compiler/lib/lowering.h"

#include "support/error.h"
#include "support/log.h"

#include <algorithm>
#include <set>

namespace popc::lib {

namespace {

void bindConstant(const ir::Tensor &t, Lowering &L) {
  Value v = L.newValue(t.name, t.info, graph::TensorRole::Constant);
  L.graph.tensor(v.tensor).constData = t.data;
  L.mapLinearly(v);
  L.bind(t.name, v);
}

// Graph outputs are streamed from a tensor of their own: an intermediate
// becomes the output; inputs, constants or a value streamed twice get a copy.
void streamOutput(const std::string &name, const ir::Graph &g, Lowering &L,
                  std::set<graph::TensorId> &streamed) {
  auto &dg = L.graph;
  const ir::TensorInfo &info = g.tensor(name).info;
  if (!L.has(name)) {
    if (g.tensor(name).kind != ir::TensorKind::Constant)
      fail("internal error: graph output '{}' was never computed", name);
    bindConstant(g.tensor(name), L);
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
    OpBuilder b(L, name + "/copy");
    dg.exchange(b.preExchange()).copies.push_back({v.tensor, 0, copy.tensor, 0, t.bytes});
    outTensor = copy.tensor;
  }
  streamed.insert(outTensor);
  const uint32_t stream = dg.addStream(name, outTensor, graph::StreamDirection::DeviceToHost);
  dg.outputs.push_back({name, info.dtype, info.shape, outTensor, stream});
}

} // namespace

void lowerIr(const ir::Ir &ir, graph::DeviceGraph &dg, codegen::VertexCodegen &codegen) {
  auto log = log::get("lib");
  Lowering L(dg, codegen);
  L.setCurrentIpu(0);
  const ir::Graph &g = ir.main;
  dg.modelName = ir.modelName;

  for (const std::string &name : g.inputs) {
    const ir::Tensor &t = g.tensor(name);
    Value v = L.newValue(name, t.info, graph::TensorRole::Input);
    L.mapLinearly(v);
    const uint32_t stream = dg.addStream(name, v.tensor, graph::StreamDirection::HostToDevice);
    dg.main().children.push_back(graph::Program::streamCopy(stream));
    dg.inputs.push_back({name, t.info.dtype, t.info.shape, v.tensor, stream});
    L.bind(name, v);
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
        if (t.kind != ir::TensorKind::Constant)
          fail("internal error: op '{}' reads '{}' before it is defined", op->name, in);
        bindConstant(t, L);
      }
    const LowerFn *lower = findLowering(op->type);
    if (!lower)
      fail("{} '{}': no device lowering for this operator yet", op->type, op->name);
    log->debug("lowering {} '{}'", op->type, op->name);
    (*lower)(*op, g, L);
  }

  L.setCurrentIpu(0);
  std::set<graph::TensorId> streamed;
  for (const std::string &name : g.outputs)
    streamOutput(name, g, L, streamed);
  for (const graph::IoInfo &out : dg.outputs)
    dg.main().children.push_back(graph::Program::streamCopy(out.stream));
}

} // namespace popc::lib
