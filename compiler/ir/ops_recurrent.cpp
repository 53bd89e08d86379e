// Recurrent ops: RNN, GRU, LSTM (default activations).
#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"
#include "compiler/ir/op_registry.h"

#include <fmt/ranges.h>

namespace popc::ir {

RecurrentParams recurrentParams(const Op &op, const Graph &graph) {
  using detail::failOp;
  const TensorInfo &x = detail::inputInfo(op, graph, 0);
  const TensorInfo &w = detail::inputInfo(op, graph, 1);
  RecurrentParams p;
  p.gates = op.type == "LSTM" ? 4 : op.type == "GRU" ? 3 : 1;
  p.layout = op.attrs.getInt("layout", 0);
  if (p.layout != 0 && p.layout != 1)
    failOp(op, "layout must be 0 or 1, got {}", p.layout);
  if (x.shape.size() != 3)
    failOp(op, "X must have rank 3, got {}", shapeToString(x.shape));
  p.seq = x.shape[p.layout ? 1 : 0];
  p.batch = x.shape[p.layout ? 0 : 1];
  p.input = x.shape[2];
  const std::string direction = op.attrs.getString("direction", "forward");
  p.dirMode = direction == "forward" ? 0 : direction == "reverse" ? 1 : direction == "bidirectional" ? 2 : -1;
  if (p.dirMode < 0)
    failOp(op, "direction '{}' must be forward, reverse or bidirectional", direction);
  p.dirs = p.dirMode == 2 ? 2 : 1;
  if (w.shape.size() != 3 || w.shape[0] != p.dirs || w.shape[1] % p.gates != 0 || w.shape[2] != p.input)
    failOp(op, "W must have shape [{}, {}*hidden, {}], got {}", p.dirs, p.gates, p.input, shapeToString(w.shape));
  p.hidden = op.attrs.getInt("hidden_size", w.shape[1] / p.gates);
  if (p.hidden != w.shape[1] / p.gates)
    failOp(op, "hidden_size {} does not match W {}", p.hidden, shapeToString(w.shape));
  p.clip = op.attrs.getFloat("clip", 0.0);
  p.linearBeforeReset = op.attrs.getInt("linear_before_reset", 0) != 0;
  if (op.attrs.getInt("input_forget", 0) != 0)
    failOp(op, "input_forget = 1 (coupled input and forget gates) is not supported");
  const std::vector<std::string> defaults =
      op.type == "LSTM" ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
      : op.type == "GRU" ? std::vector<std::string>{"Sigmoid", "Tanh"}
                         : std::vector<std::string>{"Tanh"};
  if (op.attrs.has("activations")) {
    const auto *acts = std::get_if<std::vector<std::string>>(&op.attrs.all().at("activations"));
    if (!acts)
      failOp(op, "attribute 'activations' must be a list of strings");
    for (size_t i = 0; i < acts->size(); ++i)
      if ((*acts)[i] != defaults[i % defaults.size()])
        failOp(op, "activation '{}' is not supported (only the defaults: {})", (*acts)[i],
               fmt::join(defaults, ", "));
  }
  auto expect = [&](size_t i, const Shape &shape, const char *what) {
    if (!op.hasInput(i))
      return;
    const TensorInfo &t = detail::inputInfo(op, graph, i);
    if (t.shape != shape)
      failOp(op, "{} must have shape {}, got {}", what, shapeToString(shape), shapeToString(t.shape));
    if (i != 4 && t.dtype != x.dtype)
      failOp(op, "{} must be {} like X, got {}", what, dtypeName(x.dtype), dtypeName(t.dtype));
  };
  const Shape state = p.layout ? Shape{p.batch, p.dirs, p.hidden} : Shape{p.dirs, p.batch, p.hidden};
  expect(2, {p.dirs, p.gates * p.hidden, p.hidden}, "R");
  expect(3, {p.dirs, 2 * p.gates * p.hidden}, "B");
  expect(4, {p.batch}, "sequence_lens");
  expect(5, state, "initial_h");
  if (op.type == "LSTM") {
    expect(6, state, "initial_c");
    expect(7, {p.dirs, 3 * p.hidden}, "P");
  }
  if (op.hasInput(4) && detail::inputInfo(op, graph, 4).dtype != DType::I32)
    failOp(op, "sequence_lens must be int32");
  return p;
}

namespace detail {
namespace {

std::vector<TensorInfo> inferRecurrent(const Op &op, const Graph &graph) {
  const TensorInfo &x = inputInfo(op, graph, 0);
  if (x.dtype != DType::F32 && x.dtype != DType::F64)
    failOp(op, "X dtype {} is not supported (float32, float64)", dtypeName(x.dtype));
  const RecurrentParams p = recurrentParams(op, graph);
  const size_t maxOutputs = op.type == "LSTM" ? 3 : 2;
  if (op.outputs.size() > maxOutputs)
    failOp(op, "has at most {} outputs, got {}", maxOutputs, op.outputs.size());
  const Shape y = p.layout ? Shape{p.batch, p.seq, p.dirs, p.hidden} : Shape{p.seq, p.dirs, p.batch, p.hidden};
  const Shape state = p.layout ? Shape{p.batch, p.dirs, p.hidden} : Shape{p.dirs, p.batch, p.hidden};
  std::vector<TensorInfo> out{TensorInfo{x.dtype, y}, TensorInfo{x.dtype, state}, TensorInfo{x.dtype, state}};
  out.resize(op.outputs.size());
  return out;
}

} // namespace

void registerRecurrentOps(OpRegistry &reg) {
  reg.add({"RNN", 3, 6, inferRecurrent});
  reg.add({"GRU", 3, 6, inferRecurrent});
  reg.add({"LSTM", 3, 8, inferRecurrent});
}

} // namespace detail
} // namespace popc::ir
