// Lowerings of recurrent ops (RNN, GRU, LSTM): one codelet vertex per op on
// one tile, stepping through time (the recurrence is sequential). Layers too
// big for that, and layers being trained, reach here unrolled over time
// instead (compiler/passes/rnn_decompose.cpp).
#include "compiler/lib/ops.h"
#include "compiler/lib/rows.h"

#include "compiler/ir/op_attrs.h"
#include "compiler/ir/op_helpers.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

namespace popc::lib {

namespace {

using codegen::FieldAccess;

void lowerRecurrent(const ir::Op &op, const ir::Graph &g, Lowering &L) {
  const ir::RecurrentParams p = ir::recurrentParams(op, g);
  const Value x = L.value(op.inputs[0]);
  const DType t = x.info.dtype;
  const Shape state = p.layout ? Shape{p.batch, p.dirs, p.hidden} : Shape{p.dirs, p.batch, p.hidden};
  auto inputOr = [&](size_t i, const std::string &what, DType dtype, const Shape &shape, std::vector<uint8_t> fill = {}) {
    return op.hasInput(i) ? L.value(op.inputs[i])
                          : constantTensor(L, op.name + "/" + what, ir::TensorInfo{dtype, shape}, std::move(fill));
  };
  std::vector<uint8_t> fullLengths(size_t(p.batch) * 4);
  for (int64_t b = 0; b < p.batch; ++b) {
    const int32_t len = int32_t(p.seq);
    std::memcpy(fullLengths.data() + b * 4, &len, 4);
  }
  const std::vector<Value> inputs{
      x,
      L.value(op.inputs[1]),
      L.value(op.inputs[2]),
      inputOr(3, "B", t, {p.dirs, 2 * p.gates * p.hidden}),
      inputOr(4, "sequence_lens", DType::I32, {p.batch}, fullLengths),
      inputOr(5, "initial_h", t, state),
      inputOr(6, "initial_c", t, state),
      inputOr(7, "P", t, {p.dirs, 3 * p.hidden}),
  };
  const Shape y = p.layout ? Shape{p.batch, p.seq, p.dirs, p.hidden} : Shape{p.seq, p.dirs, p.batch, p.hidden};
  const Shape shapes[3] = {y, state, state};
  std::vector<Value> outputs;
  for (size_t i = 0; i < 3; ++i) {
    const bool used = i < op.outputs.size() && !op.outputs[i].empty();
    Value v = L.newValue(used ? op.outputs[i] : op.name + fmt::format("/unused{}", i), ir::TensorInfo{t, shapes[i]});
    if (used)
      L.bind(op.outputs[i], v);
    outputs.push_back(v);
  }
  // State, gates, and one direction's W and R transposed (the codelet's rows
  // of weights for one input element side by side: compiler/codelets/recurrent.cpp).
  const uint64_t scratchElems = uint64_t(2 * p.batch * p.hidden + (p.gates + 1) * p.hidden +
                                         p.gates * p.hidden * (p.input + p.hidden));
  outputs.push_back(L.newValue(op.name + "/scratch", ir::TensorInfo{t, {int64_t(scratchElems)}}));

  codegen::CodeletSpec spec;
  spec.function = "popc_recurrent_" + ir::detail::shortDType(t);
  spec.name = fmt::format("{}_s{}_b{}_i{}_h{}_d{}_{}", op.type, p.seq, p.batch, p.input, p.hidden, p.dirs,
                          ir::detail::shortDType(t));
  const char *names[] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"};
  for (size_t i = 0; i < inputs.size(); ++i)
    spec.fields.push_back({names[i], uint32_t(inputs[i].info.bytes()), FieldAccess::Input});
  const char *outNames[] = {"Y", "Y_h", "Y_c", "scratch"};
  for (size_t i = 0; i < outputs.size(); ++i)
    spec.fields.push_back({outNames[i], uint32_t(outputs[i].info.bytes()), FieldAccess::Output});
  const int64_t kind = op.type == "LSTM" ? 2 : op.type == "GRU" ? 1 : 0;
  spec.args = {kind,   p.seq,     p.batch,  p.input, p.hidden, p.dirs, p.dirMode,
               p.layout, p.linearBeforeReset ? 1 : 0, std::bit_cast<int64_t>(p.clip)};
  spec.cycles = 20 + uint64_t(p.seq * p.dirs * p.batch * p.gates * p.hidden * (p.input + p.hidden + 20));

  lowerOnOneTile(L, op.name, inputs, outputs, spec);
}

} // namespace

void registerRecurrentLowerings(LoweringTable &t) {
  t["RNN"] = lowerRecurrent;
  t["GRU"] = lowerRecurrent;
  t["LSTM"] = lowerRecurrent;
}

} // namespace popc::lib
