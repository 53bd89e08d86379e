// The training passes (docs/training.md), no-ops unless Ir::training is set:
//   training-setup  adds a built-in loss and turns the trainable initializers
//                   into device variables (before the forward passes, which
//                   then never fold them);
//   autodiff        appends the backward pass (ir/autodiff.h);
//   optimizer       appends each weight's update and its optimizer state, as
//                   variable updates at the end of the step, following
//                   torch.optim's rules (../shared/reference/training-facts.md).
#include "compiler/ir/autodiff.h"
#include "compiler/ir/op_registry.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/error.h"
#include "support/log.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <set>

namespace popc::passes {

namespace {

bool trainableDType(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16; }

std::vector<std::string> splitCommas(const std::string &s) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t comma = s.find(',', begin);
    parts.push_back(s.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin));
    if (comma == std::string::npos)
      return parts;
    begin = comma + 1;
  }
}

const ir::Tensor &lossOperand(const ir::Graph &g, const std::string &spec, const std::string &name, const char *what) {
  if (!g.hasTensor(name))
    fail("--loss {}: {} '{}' is not a tensor of the model", spec, what, name);
  return g.tensor(name);
}

// A built-in loss runs on the IPU (and so in the pipeline stage) of the
// tensor it reads: the model's last layer.
int64_t producerIpu(const ir::Graph &g, const std::string &name) {
  const auto p = g.producer(name);
  return p ? g.ops()[*p]->ipu : 0;
}

// nll:PROBS,LABEL[,mean|sum] = -reduce(log(PROBS[n, LABEL[n]])), PopART's NllLoss.
std::string addNllLoss(ir::Graph &g, const std::string &spec, const std::vector<std::string> &args) {
  if (args.size() < 2 || args.size() > 3 || (args.size() == 3 && args[2] != "mean" && args[2] != "sum"))
    fail("--loss {}: expected nll:PROBS,LABEL[,mean|sum]", spec);
  const ir::Tensor &probs = lossOperand(g, spec, args[0], "PROBS");
  if (!g.hasTensor(args[1]) && probs.info.shape.size() == 2) { // a new input, as PopART's label stream
    ir::Tensor t;
    t.name = args[1];
    t.kind = ir::TensorKind::Input;
    t.info = {DType::I64, {probs.info.shape[0]}};
    g.addTensor(std::move(t));
    g.inputs.push_back(args[1]);
  }
  const ir::Tensor &label = lossOperand(g, spec, args[1], "LABEL");
  if (probs.info.shape.size() != 2 || !trainableDType(probs.info.dtype))
    fail("--loss {}: PROBS '{}' must be float [batch, classes], got {} {}", spec, args[0], dtypeName(probs.info.dtype),
         shapeToString(probs.info.shape));
  if (label.info.shape != Shape{probs.info.shape[0]} || isFloatingPoint(label.info.dtype))
    fail("--loss {}: LABEL '{}' must be integer [{}] (one class per row of PROBS), got {} {}", spec, args[1],
         probs.info.shape[0], dtypeName(label.info.dtype), shapeToString(label.info.shape));
  OpInserter ins(g, g.ops().size(), "nll_loss", producerIpu(g, args[0]));
  ir::Attributes axis1, keep0;
  axis1.set("axis", int64_t(1));
  keep0.set("keepdims", int64_t(0));
  const std::string shape = addConstant(g, "nll_loss/shape", {DType::I64, {2}},
                                        [&] {
                                          std::vector<uint8_t> b(16);
                                          const int64_t v[2] = {probs.info.shape[0], 1};
                                          std::memcpy(b.data(), v, 16);
                                          return b;
                                        }());
  const std::string index = ins.add("Reshape", {ins.cast(args[1], DType::I64), shape});
  const std::string picked = ins.add("GatherElements", {ins.add("Log", {args[0]}), index}, "", axis1);
  const bool sum = args.size() == 3 && args[2] == "sum";
  return ins.add("Neg", {ins.add(sum ? "ReduceSum" : "ReduceMean", {picked}, "", keep0)}, g.uniqueName("nll_loss"));
}

// l1:X[,scale[,mean|sum]] = scale * reduce(|X|), PopART's L1Loss (mean by default).
std::string addL1Loss(ir::Graph &g, const std::string &spec, const std::vector<std::string> &args) {
  if (args.empty() || args.size() > 3 || (args.size() == 3 && args[2] != "mean" && args[2] != "sum"))
    fail("--loss {}: expected l1:X[,scale[,mean|sum]]", spec);
  const ir::Tensor &x = lossOperand(g, spec, args[0], "X");
  if (!trainableDType(x.info.dtype))
    fail("--loss {}: X '{}' must be float, got {}", spec, args[0], dtypeName(x.info.dtype));
  double scale = 1.0;
  if (args.size() >= 2) {
    size_t used = 0;
    try {
      scale = std::stod(args[1], &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != args[1].size())
      fail("--loss {}: scale '{}' is not a number", spec, args[1]);
  }
  OpInserter ins(g, g.ops().size(), "l1_loss", producerIpu(g, args[0]));
  ir::Attributes keep0;
  keep0.set("keepdims", int64_t(0));
  const bool sum = args.size() == 3 && args[2] == "sum";
  const std::string reduced = ins.add(sum ? "ReduceSum" : "ReduceMean", {ins.add("Abs", {args[0]})}, "", keep0);
  const std::string s = addFloatConstant(g, "l1_loss/scale", x.info.dtype, {}, {scale});
  return ins.add("Mul", {reduced, s}, g.uniqueName("l1_loss"));
}

} // namespace

size_t setUpTraining(ir::Ir &ir) {
  if (!ir.training)
    return 0;
  ir::TrainingConfig &cfg = *ir.training;
  ir::Graph &g = ir.main;
  size_t changes = 0;
  // The loss: a built-in one, added now, or a tensor of the model.
  const auto colon = cfg.loss.find(':');
  if (colon != std::string::npos) {
    const std::string kind = cfg.loss.substr(0, colon);
    const auto args = splitCommas(cfg.loss.substr(colon + 1));
    if (kind == "nll")
      cfg.loss = addNllLoss(g, cfg.loss, args);
    else if (kind == "l1")
      cfg.loss = addL1Loss(g, cfg.loss, args);
    else
      fail("--loss {}: unknown built-in loss '{}': use a scalar output of the model, nll:PROBS,LABEL[,mean|sum] or "
           "l1:X[,scale]",
           cfg.loss, kind);
    ++changes;
  } else if (!g.hasTensor(cfg.loss)) {
    fail("--loss {}: the model has no tensor of that name; its outputs are {}", cfg.loss, fmt::join(g.outputs, ", "));
  }
  if (!isGraphOutput(g, cfg.loss))
    g.outputs.insert(g.outputs.begin(), cfg.loss);

  // Training-mode BatchNormalization: its running mean and variance are
  // variables too, updated each micro-batch from the batch statistics (its
  // outputs 1 and 2), but not trained.
  std::set<std::string> runningStats;
  for (const auto &op : g.ops())
    if (op->type == "BatchNormalization" && op->attrs.getInt("training_mode", 0) != 0)
      for (size_t k : {size_t(1), size_t(2)})
        if (k < op->outputs.size() && !op->outputs[k].empty() && g.hasTensor(op->inputs[k + 2]) &&
            g.tensor(op->inputs[k + 2]).kind == ir::TensorKind::Constant && runningStats.insert(op->inputs[k + 2]).second) {
          g.tensor(op->inputs[k + 2]).kind = ir::TensorKind::Variable;
          g.updates.push_back({op->inputs[k + 2], op->outputs[k], 0});
        }

  // The trainable tensors become variables.
  std::vector<std::string> trainable;
  if (cfg.trainable.empty()) {
    for (const std::string &name : ir.initializers)
      if (g.hasTensor(name) && g.tensor(name).kind == ir::TensorKind::Constant &&
          trainableDType(g.tensor(name).info.dtype) && !g.tensor(name).info.shape.empty() && !g.consumers(name).empty())
        trainable.push_back(name);
  } else {
    for (const std::string &name : cfg.trainable) {
      if (std::find(ir.initializers.begin(), ir.initializers.end(), name) == ir.initializers.end() ||
          !g.hasTensor(name))
        fail("--trainable {}: not an initializer of the model (trainable tensors are initializers: weights, biases)",
             name);
      if (!trainableDType(g.tensor(name).info.dtype))
        fail("--trainable {}: it is {}; popc trains float32, float64 and float16 tensors", name,
             dtypeName(g.tensor(name).info.dtype));
      if (std::find(trainable.begin(), trainable.end(), name) == trainable.end())
        trainable.push_back(name);
    }
  }
  for (const std::string &name : trainable)
    g.tensor(name).kind = ir::TensorKind::Variable;
  cfg.trainable = trainable;
  return changes + trainable.size();
}

size_t buildBackward(ir::Ir &ir) {
  if (!ir.training)
    return 0;
  ir::TrainingConfig &cfg = *ir.training;
  ir::Graph &g = ir.main;
  // Variables the loss no longer reads (a pass removed their use) stay constants.
  std::vector<std::string> wrt;
  for (const std::string &name : cfg.trainable)
    if (g.hasTensor(name) && !g.consumers(name).empty())
      wrt.push_back(name);
  const size_t before = g.ops().size();
  ir.gradients = ir::appendGradients(g, {cfg.loss, wrt, cfg.lossScaling});
  for (const std::string &name : cfg.trainable)
    if (g.hasTensor(name) && !ir.gradients.count(name))
      g.tensor(name).kind = ir::TensorKind::Constant;
  cfg.trainable.clear();
  for (const auto &[name, grad] : ir.gradients)
    cfg.trainable.push_back(name);
  return g.ops().size() - before;
}

namespace {

// One weight's update, appended to the graph.
class UpdateBuilder {
public:
  UpdateBuilder(ir::Graph &g, const ir::TrainingConfig &cfg, const std::string &weight, int64_t phase)
      : g_(g), cfg_(cfg), w_(weight), info_(g.tensor(weight).info), ins_(g, g.ops().size(), weight + "/update", 0),
        phase_(phase) {
    info_.dtype = mathType(info_.dtype);
  }

  // float16 weights are updated in float32 (state, accumulators and the
  // arithmetic; the new weight is rounded once): Adam's epsilon and small
  // steps would vanish in float16.
  static DType mathType(DType weight) { return weight == DType::F16 ? DType::F32 : weight; }
  std::string cast(const std::string &x, DType to) {
    return g_.tensor(x).info.dtype == to ? x : ins_.cast(x, to);
  }
  std::string toMath(const std::string &x) { return cast(x, info_.dtype); }

  std::string scalar(double v) { return addFloatConstant(g_, w_ + "/c", info_.dtype, {}, {v}); }
  std::string op(const std::string &type, std::vector<std::string> inputs) { return ins_.add(type, std::move(inputs)); }
  // The sum of x over the replicas (ai.graphcore ReplicatedAllReduce).
  std::string allReduce(const std::string &x, uint32_t replicas) {
    ir::Attributes a;
    a.set("replicas", int64_t(replicas));
    return ins_.add("ReplicatedAllReduce", {x}, "", a, ir::kGraphcoreDomain);
  }
  std::string mul(const std::string &a, double b) { return op("Mul", {a, scalar(b)}); }
  std::string add(const std::string &a, const std::string &b) { return op("Add", {a, b}); }

  // A zero-initialised state variable (PopART's names: Accl___W, Accl1___W, ...).
  std::string state(const std::string &prefix, const ir::TensorInfo &info) {
    ir::Tensor t;
    t.name = prefix + w_;
    if (g_.hasTensor(t.name))
      fail("--train: the model already has a tensor named '{}', the name of {}'s optimizer state", t.name, w_);
    t.info = info;
    t.kind = ir::TensorKind::Variable;
    t.data.assign(info.bytes(), 0);
    return g_.addTensor(std::move(t)).name;
  }

  void update(const std::string &variable, const std::string &value) { g_.updates.push_back({variable, value, phase_}); }

  // Returns the new weight (in the weight's type).
  std::string build(std::string grad, const std::string &step) {
    const DType weightType = g_.tensor(w_).info.dtype;
    return cast(buildInMathType(toMath(grad), toMath(w_), step), weightType);
  }

private:
  std::string buildInMathType(std::string grad, const std::string &w0, const std::string &step) {
    if (cfg_.lossScaling != 1.0)
      grad = mul(grad, 1.0 / cfg_.lossScaling);
    const std::string &o = cfg_.optimizer;
    if (o == "sgd" || o == "momentum") {
      if (cfg_.weightDecay != 0)
        grad = add(grad, mul(w0, cfg_.weightDecay));
      if (cfg_.momentum != 0) {
        const std::string b = state("Accl___", info_);
        // First step: b = g (torch.optim.SGD); after: mu b + (1 - dampening) g.
        const std::string later = add(mul(b, cfg_.momentum), mul(grad, 1.0 - cfg_.dampening));
        const std::string first = op("Equal", {step, addFloatConstant(g_, w_ + "/c", DType::F32, {}, {0.0})});
        const std::string bNew = op("Where", {first, grad, later});
        update(b, bNew);
        grad = cfg_.nesterov ? add(grad, mul(bNew, cfg_.momentum)) : bNew;
      }
      return op("Sub", {w0, mul(grad, cfg_.learningRate)});
    }
    // adam / adamw, with the step count t = step + 1.
    std::string w = w0;
    if (o == "adamw" && cfg_.weightDecay != 0)
      w = mul(w, 1.0 - cfg_.learningRate * cfg_.weightDecay);
    if (o == "adam" && cfg_.weightDecay != 0)
      grad = add(grad, mul(w0, cfg_.weightDecay));
    const std::string m = state("Accl1___", info_), v = state("Accl2___", info_);
    const std::string mNew = add(mul(m, cfg_.beta1), mul(grad, 1.0 - cfg_.beta1));
    const std::string vNew = add(mul(v, cfg_.beta2), mul(op("Mul", {grad, grad}), 1.0 - cfg_.beta2));
    update(m, mNew);
    update(v, vNew);
    std::string t = op("Add", {step, addFloatConstant(g_, w_ + "/c", DType::F32, {}, {1.0})});
    t = toMath(t); // (float64 weights: the float32 step count as float64)
    // bias corrections 1 - beta^t; torch's order: sqrt(v) / sqrt(bc2) + eps.
    const std::string bc1 = op("Sub", {scalar(1.0), op("Pow", {scalar(cfg_.beta1), t})});
    const std::string bc2 = op("Sub", {scalar(1.0), op("Pow", {scalar(cfg_.beta2), t})});
    const std::string denom = add(op("Div", {op("Sqrt", {vNew}), op("Sqrt", {bc2})}), scalar(cfg_.epsilon));
    const std::string stepSize = op("Div", {scalar(cfg_.learningRate), bc1});
    return op("Sub", {w, op("Mul", {stepSize, op("Div", {mNew, denom})})});
  }

  ir::Graph &g_;
  const ir::TrainingConfig &cfg_;
  std::string w_;
  ir::TensorInfo info_;
  OpInserter ins_;
  int64_t phase_;
};

} // namespace

size_t buildOptimizer(ir::Ir &ir) {
  if (!ir.training)
    return 0;
  const ir::TrainingConfig &cfg = *ir.training;
  ir::Graph &g = ir.main;
  const size_t before = g.ops().size();
  // The number of updates so far (float32: exact up to 2^24 steps), shared by every weight.
  ir::Tensor step;
  step.name = "Step___";
  if (g.hasTensor(step.name))
    fail("--train: the model already has a tensor named 'Step___', the optimizer's step count");
  step.info = {DType::F32, {}};
  step.kind = ir::TensorKind::Variable;
  step.data.assign(4, 0);
  g.addTensor(std::move(step));
  // Gradient accumulation: every micro-batch adds its gradients into
  // Accum___W; the update (phase 1) runs once per step on their mean (or sum)
  // and clears them.
  const uint32_t A = cfg.accumulationFactor;
  const int64_t phase = A > 1 ? 1 : 0;
  std::map<std::string, std::string> grads = ir.gradients;
  if (A > 1)
    for (auto &[weight, grad] : grads) {
      ir::Tensor acc;
      acc.name = "Accum___" + weight;
      if (g.hasTensor(acc.name))
        fail("--train: the model already has a tensor named '{}', the name of {}'s gradient accumulator", acc.name,
             weight);
      acc.info = g.tensor(weight).info;
      acc.info.dtype = UpdateBuilder::mathType(acc.info.dtype); // float16 gradients add up in float32
      acc.kind = ir::TensorKind::Variable;
      acc.data.assign(acc.info.bytes(), 0);
      g.addTensor(std::move(acc));
      OpInserter ins(g, g.ops().size(), "Accum___" + weight, 0);
      const DType accType = g.tensor("Accum___" + weight).info.dtype;
      const std::string value = g.tensor(grad).info.dtype == accType ? grad : ins.cast(grad, accType);
      g.updates.push_back({"Accum___" + weight, ins.add("Add", {"Accum___" + weight, value}), 0});
      grad = "Accum___" + weight;
    }
  const size_t firstUpdateOp = g.ops().size();
  for (const auto &[weight, grad] : grads) {
    UpdateBuilder b(g, cfg, weight, phase);
    std::string g1 = grad;
    const uint32_t R = cfg.replicationFactor;
    if (R > 1)
      g1 = b.allReduce(g1, R);
    g1 = b.toMath(g1);
    if (A * R > 1 && !cfg.sumGradients)
      g1 = b.mul(g1, 1.0 / double(A * R));
    g.updates.push_back({weight, b.build(g1, "Step___"), phase});
    if (A > 1) {
      const ir::TensorInfo &info = g.tensor(grad).info;
      std::vector<int64_t> shape(info.shape.begin(), info.shape.end());
      std::vector<uint8_t> bytes(shape.size() * 8);
      if (!shape.empty())
        std::memcpy(bytes.data(), shape.data(), bytes.size());
      const std::string dims = addConstant(g, grad + "/shape", {DType::I64, {int64_t(shape.size())}}, std::move(bytes));
      g.updates.push_back({grad, b.op("Expand", {b.scalar(0.0), dims}), phase});
    }
  }
  OpInserter ins(g, g.ops().size(), "Step___/update", 0);
  g.updates.push_back(
      {"Step___", ins.add("Add", {"Step___", addFloatConstant(g, "Step___/one", DType::F32, {}, {1.0})}), phase});
  for (size_t i = firstUpdateOp; i < g.ops().size(); ++i)
    g.ops()[i]->phase = phase;
  // The update's constant arithmetic (1 - beta, lr / ...) folds; unused gradients go.
  foldConstants(ir);
  eliminateDeadCode(ir);
  return g.ops().size() - before;
}

} // namespace popc::passes
