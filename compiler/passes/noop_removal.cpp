// No-op removal: ops that pass their data through unchanged cost a copy (and
// tile memory) on the device for nothing. The importer keeps them because ONNX
// has them; here they go. A graph output name is part of the executable's
// interface, so when a removed op writes a graph output, the producer of its
// input is renamed to write that output instead.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

namespace {

bool isConstantFalse(const ir::Graph &g, const std::string &name) {
  if (!isConstant(g, name))
    return false;
  const ir::Tensor &t = g.tensor(name);
  for (uint8_t b : t.data)
    if (b != 0)
      return false;
  return true;
}

// True if the op's first output is bit-identical to its first input.
bool isNoOp(const ir::Graph &g, const ir::Op &op, const std::set<std::string> &captured) {
  if (!isOnnxOp(op) || !op.hasInput(0) || op.outputs.empty() || op.outputs[0].empty())
    return false;
  const std::string &in = op.inputs[0], &out = op.outputs[0];
  if (!g.hasTensor(in) || !g.hasTensor(out) || g.tensor(in).info != g.tensor(out).info)
    return false;
  const std::string &t = op.type;
  if (t == "Identity" || t == "Reshape" || t == "Flatten" || t == "Squeeze" || t == "Unsqueeze")
    return op.outputs.size() == 1;
  if (t == "Transpose") {
    std::vector<int64_t> perm = op.attrs.getInts("perm");
    for (size_t i = 0; i < perm.size(); ++i)
      if (perm[i] != int64_t(i))
        return false;
    // Without perm, Transpose reverses the dims: a no-op only for rank <= 1.
    return !perm.empty() || g.tensor(in).info.shape.size() <= 1;
  }
  if (t == "Dropout") {
    // Inference Dropout is the identity. A training_mode input that is not a
    // constant false, or a used mask output, keeps the op for the lowering to handle.
    if (op.hasInput(2) && !isConstantFalse(g, op.inputs[2]))
      return false;
    return op.outputs.size() < 2 || op.outputs[1].empty() || !g.hasTensor(op.outputs[1]) ||
           isUnused(g, captured, op.outputs[1]);
  }
  return false;
}

} // namespace

size_t removeNoOps(ir::Ir &ir) {
  ir::Graph &g = ir.main;
  std::set<std::string> captured = namesUsedBySubgraphs(ir);
  size_t removed = 0;
  for (size_t i = 0; i < g.ops().size();) {
    ir::Op &op = *g.ops()[i];
    if (!isNoOp(g, op, captured)) {
      ++i;
      continue;
    }
    std::string in = op.inputs[0], out = op.outputs[0], what = op.name + " (" + op.type + ")";
    bool outIsInterface = isGraphOutput(g, out) || captured.count(out);
    if (!outIsInterface) {
      // Readers of `out` read `in` directly.
      g.replaceAllUses(out, in);
      removeOpAndDeadOutputs(g, i, captured);
    } else {
      // `out` must survive: make the producer of `in` write `out`. Impossible
      // when `in` is itself an interface tensor (input, constant, output).
      auto p = g.producer(in);
      if (!p || isGraphOutput(g, in) || captured.count(in)) {
        ++i;
        continue;
      }
      ir::Op &producer = *g.ops()[*p];
      removeOpAndDeadOutputs(g, i, captured); // out stays: it is a graph output
      for (auto &o : producer.outputs)
        if (o == in)
          o = out;
      g.replaceAllUses(in, out); // remaining readers of `in` come after the producer
      g.removeTensor(in);
    }
    log::get("passes")->trace("no-op removal: {}", what);
    ++removed;
  }
  return removed;
}

} // namespace popc::passes
