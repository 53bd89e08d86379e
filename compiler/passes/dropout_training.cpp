// Training-mode Dropout (--train: as in PopART's TrainingSession, every Dropout
// is active). Each element is kept with probability 1 - ratio and scaled by
// 1 / (1 - ratio):
//   bits = RandomBits(index, counter) {seed}   24 random bits per element
//   keep = bits < (1 - ratio) * 2^24           the mask (Dropout's output 1)
//   y    = x * (Cast(keep) / (1 - ratio))
// `index` is each element's position (a constant), `counter` the variable
// DropoutStep___, advanced by one every micro-batch, so each micro-batch draws
// a new mask and a run from the same state draws the same one (deterministic).
// Each Dropout has its own seed (its `seed` attribute, else its position
// among the Dropouts). The backward pass is Mul's: g times the same mask.
#include "compiler/ir/op_helpers.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/error.h"
#include "support/log.h"

#include <cmath>
#include <cstring>

namespace popc::passes {

namespace {

constexpr const char *kCounter = "DropoutStep___";

// Dropout's ratio: the attribute before opset 12, a constant input after.
double dropoutRatio(const ir::Graph &g, const ir::Op &op) {
  if (!op.hasInput(1))
    return op.attrs.getFloat("ratio", 0.5);
  if (!isConstant(g, op.inputs[1]))
    fail("Dropout '{}': --train needs its ratio '{}' at compile time", op.name, op.inputs[1]);
  return constantAsDoubles(g.tensor(op.inputs[1]))[0];
}

std::string addCounter(ir::Graph &g) {
  if (g.hasTensor(kCounter))
    fail("--train: the model already has a tensor named '{}', the training-mode Dropouts' step", kCounter);
  ir::Tensor t;
  t.name = kCounter;
  t.info = {DType::I32, {}};
  t.kind = ir::TensorKind::Variable;
  t.data.assign(4, 0);
  g.addTensor(std::move(t));
  return kCounter;
}

} // namespace

size_t trainDropouts(ir::Ir &ir) {
  if (!ir.training)
    return 0;
  ir::Graph &g = ir.main;
  std::string counter;
  int64_t seed = 0;
  const size_t count = replaceOps(
      ir, [](const ir::Graph &, const ir::Op &op) { return op.type == "Dropout"; },
      [&](ir::Graph &graph, size_t i, const Replaced &r) {
        const ir::Op &op = r.op;
        const double ratio = dropoutRatio(graph, op);
        if (ratio < 0 || ratio >= 1)
          fail("Dropout '{}': ratio {} must be in [0, 1)", op.name, ratio);
        if (counter.empty())
          counter = addCounter(graph);
        const ir::TensorInfo x = graph.tensor(op.inputs[0]).info;
        if (!isFloatingPoint(x.dtype))
          fail("Dropout '{}': input is {}; expected a float type", op.name, dtypeName(x.dtype));
        OpInserter ops(graph, i, op.name, op.ipu);
        std::vector<uint8_t> iota(size_t(x.elements()) * 4);
        for (int64_t k = 0; k < x.elements(); ++k) {
          const auto v = int32_t(k);
          std::memcpy(iota.data() + 4 * k, &v, 4);
        }
        const std::string index = addConstant(graph, op.name + "_index", {DType::I32, x.shape}, iota);
        ir::Attributes bitsAttrs, toFloat, toX;
        bitsAttrs.set("seed", op.attrs.has("seed") ? op.attrs.getInt("seed", 0) : seed++);
        toFloat.set("to", int64_t(1));
        const std::string bits = ops.add("Cast", {ops.add("RandomBits", {index, counter}, "", bitsAttrs)}, "", toFloat);
        const std::string threshold = addFloatConstant(graph, op.name + "_keep", DType::F32, {}, {std::ldexp(1.0 - ratio, 24)});
        const std::string mask = op.outputs.size() > 1 && !op.outputs[1].empty() ? op.outputs[1] : "";
        const std::string keep = ops.add("Less", {bits, threshold}, mask);
        toX.set("to", ir::detail::onnxElementType(x.dtype));
        const std::string scale = addFloatConstant(graph, op.name + "_scale", x.dtype, {}, {1.0 / (1.0 - ratio)});
        ops.add("Mul", {op.inputs[0], ops.add("Mul", {ops.add("Cast", {keep}, "", toX), scale})}, op.outputs[0]);
        return ops.next() - i;
      });
  if (count) {
    // One step per micro-batch (phase 0), wrapping at 2^31.
    OpInserter ops(g, g.ops().size(), kCounter, 0);
    std::vector<uint8_t> one{1, 0, 0, 0};
    g.updates.push_back({counter, ops.add("Add", {counter, addConstant(g, "DropoutStep___one", {DType::I32, {}}, one)}), 0});
    log::get("passes")->debug("dropout-training: {} Dropouts draw masks", count);
  }
  return count;
}

} // namespace popc::passes
