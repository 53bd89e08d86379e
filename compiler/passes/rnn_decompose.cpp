// RNN, GRU and LSTM unrolled over time into MatMul and elementwise ops, as
// ONNX defines them (default activations). The input projection of every step
// is one MatMul up front; each step adds H·Rᵀ (a planned MatMul, spread over
// tiles like any other) and applies its gates.
//
// Used where the one-tile codelet (compiler/lib/recurrent.cpp) does not fit:
//   - training: the backward pass differentiates the unrolled ops;
//   - a layer bigger than kMaxOneTileBytes (weights, sequence and outputs),
//     which one tile could not hold; popnn likewise spreads a layer's hidden
//     units over tiles.
// Left to the codelet: small layers (cheaper as one vertex). A sequence_lens
// shorter than the sequence masks each step: a finished sequence keeps its
// state and outputs zeros, as ONNX defines.
#include "compiler/ir/op_attrs.h"
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

namespace popc::passes {

namespace {

// sequence_lens known at compile time with every sequence at full length.
bool fullLength(const ir::Graph &g, const ir::Op &op, const ir::RecurrentParams &p) {
  if (!isConstant(g, op.inputs[4]))
    return false;
  for (int64_t len : g.tensor(op.inputs[4]).toInt64s())
    if (len != p.seq)
      return false;
  return true;
}

// A quarter of the smallest tile (ipu1's 256 KiB); the vertex's scratch adds at most
// one direction's W and R again (transposed), so it stays within half.
constexpr uint64_t kMaxOneTileBytes = 64 * 1024;

class Unroller {
public:
  Unroller(ir::Graph &g, size_t at, const ir::Op &op, const ir::RecurrentParams &p)
      : g_(g), op_(op), p_(p), ops_(g, at, op.name, op.ipu), t_(g.tensor(op.inputs[0]).info.dtype) {}

  std::string add(const std::string &type, std::vector<std::string> in, ir::Attributes a = {}, std::string out = "") {
    return ops_.add(type, std::move(in), std::move(out), std::move(a));
  }
  std::string shape(const Shape &s) { return addInt64Constant(g_, op_.name + "_shape", s); }
  std::string reshape(const std::string &x, const Shape &s) { return add("Reshape", {x, shape(s)}); }
  std::string transpose(const std::string &x, std::vector<int64_t> perm) {
    ir::Attributes a;
    a.set("perm", perm);
    return add("Transpose", {x}, a);
  }
  // x[i] along axis 0 (the axis dropped).
  std::string pick(const std::string &x, int64_t i) {
    ir::Attributes a;
    a.set("axis", int64_t(0));
    return add("Gather", {x, addInt64Constant(g_, op_.name + "_i", {i}, true)}, a);
  }
  // Columns [begin, end) of the last axis of x (rank `rank`).
  std::string columns(const std::string &x, int64_t begin, int64_t end, int64_t rank) {
    return ops_.slice(x, rank - 1, begin, end);
  }
  // Stacks [B, H] tensors along a new axis 0.
  std::string stack(const std::vector<std::string> &parts) {
    std::vector<std::string> rows;
    for (const std::string &part : parts)
      rows.push_back(reshape(part, {1, p_.batch, p_.hidden}));
    if (rows.size() == 1)
      return rows[0];
    ir::Attributes a;
    a.set("axis", int64_t(0));
    return add("Concat", rows, a);
  }
  // ONNX's clip: pre-activations limited to [-clip, clip].
  std::string clipped(const std::string &x) {
    if (p_.clip <= 0)
      return x;
    if (g_.opset >= 11)
      return add("Clip", {x, addFloatConstant(g_, op_.name + "_lo", t_, {}, {-p_.clip}),
                          addFloatConstant(g_, op_.name + "_hi", t_, {}, {p_.clip})});
    ir::Attributes a;
    a.set("min", -p_.clip);
    a.set("max", p_.clip);
    return add("Clip", {x}, a);
  }
  std::string act(const char *type, const std::string &x) { return add(type, {clipped(x)}); }

  // The state input `i` ([D, B, H], or [B, D, H] batch-major) for direction d, or zeros.
  std::string initial(size_t i, int64_t d) {
    if (!op_.hasInput(i))
      return zeros();
    const std::string s = p_.layout ? transpose(op_.inputs[i], {1, 0, 2}) : op_.inputs[i];
    return pick(s, d);
  }

  // One direction: returns the output of every step (time order), and the final h and c (LSTM).
  std::vector<std::string> direction(int64_t d, const std::string &xs, std::string &finalH, std::string &finalC) {
    const int64_t T = p_.seq, B = p_.batch, I = p_.input, H = p_.hidden, G = p_.gates;
    const std::string wT = transpose(pick(op_.inputs[1], d), {1, 0}); // [I, G*H]
    const std::string rT = transpose(pick(op_.inputs[2], d), {1, 0}); // [H, G*H]
    std::string xw = add("MatMul", {reshape(xs, {T * B, I}), wT});    // every step's input projection
    std::string rb;
    if (op_.hasInput(3)) {
      const std::string bias = pick(op_.inputs[3], d); // [2*G*H]: Wb then Rb
      const std::string wb = columns(bias, 0, G * H, 1);
      rb = columns(bias, G * H, 2 * G * H, 1);
      // Rb joins Wb up front, except GRU's hidden gate with linear_before_reset (inside r * (...)).
      xw = add("Add", {xw, op_.type == "GRU" && p_.linearBeforeReset ? add("Add", {wb, add("Mul", {rb, rbMask()})})
                                                                        : add("Add", {wb, rb})});
    }
    xw = reshape(xw, {T, B, G * H});
    std::string h = initial(5, d), c = op_.type == "LSTM" ? initial(6, d) : "";
    std::string pi, po, pf;
    if (op_.type == "LSTM" && op_.hasInput(7)) {
      const std::string peep = pick(op_.inputs[7], d);
      pi = columns(peep, 0, H, 1), po = columns(peep, H, 2 * H, 1), pf = columns(peep, 2 * H, 3 * H, 1);
    }
    std::vector<std::string> hs(static_cast<size_t>(T));
    for (int64_t s = 0; s < T; ++s) {
      const int64_t t = p_.dirMode == 1 || d == 1 ? T - 1 - s : s;
      const std::string x = pick(xw, t); // [B, G*H]
      const std::string hPrev = h, cPrev = c;
      auto gate = [&](const std::string &v, int64_t k) { return columns(v, k * H, (k + 1) * H, 2); };
      if (op_.type == "LSTM") { // gates i, o, f, c
        const std::string v = add("Add", {x, add("MatMul", {h, rT})});
        std::string i = gate(v, 0), o = gate(v, 1), f = gate(v, 2);
        if (!pi.empty()) {
          i = add("Add", {i, add("Mul", {pi, c})});
          f = add("Add", {f, add("Mul", {pf, c})});
        }
        c = add("Add", {add("Mul", {act("Sigmoid", f), c}), add("Mul", {act("Sigmoid", i), act("Tanh", gate(v, 3))})});
        if (!po.empty())
          o = add("Add", {o, add("Mul", {po, c})});
        h = add("Mul", {act("Sigmoid", o), act("Tanh", c)});
      } else if (op_.type == "GRU") { // gates z, r, h
        const std::string hr = add("MatMul", {h, rT});
        const std::string z = act("Sigmoid", add("Add", {gate(x, 0), gate(hr, 0)}));
        const std::string r = act("Sigmoid", add("Add", {gate(x, 1), gate(hr, 1)}));
        std::string candidate;
        if (p_.linearBeforeReset) {
          std::string hh = gate(hr, 2);
          if (!rb.empty())
            hh = add("Add", {hh, columns(rb, 2 * H, 3 * H, 1)});
          candidate = add("Add", {gate(x, 2), add("Mul", {r, hh})});
        } else {
          const std::string rh = columns(rT, 2 * H, 3 * H, 2);
          candidate = add("Add", {gate(x, 2), add("MatMul", {add("Mul", {r, h}), rh})});
        }
        const std::string one = addFloatConstant(g_, op_.name + "_one", t_, {}, {1.0});
        h = add("Add", {add("Mul", {add("Sub", {one, z}), act("Tanh", candidate)}), add("Mul", {z, h})});
      } else { // RNN
        h = act("Tanh", add("Add", {x, add("MatMul", {h, rT})}));
      }
      if (lengths_.empty()) {
        hs[size_t(t)] = h;
        continue;
      }
      // sequence_lens: a sequence shorter than t + 1 keeps its state and outputs zeros
      // (in reverse too: its state stays the initial one until its last element).
      const std::string valid = add("Less", {addInt64Constant(g_, op_.name + "_t", {t}, true), lengths_}); // [B, 1]
      hs[size_t(t)] = add("Where", {valid, h, zeros()});
      h = add("Where", {valid, h, hPrev});
      if (!c.empty())
        c = add("Where", {valid, c, cPrev});
    }
    finalH = h;
    finalC = c;
    return hs;
  }

  // A [B, H] of zeros, one constant for the op.
  std::string zeros() {
    if (zeros_.empty())
      zeros_ = addFloatConstant(g_, op_.name + "_zero", t_, {p_.batch, p_.hidden},
                                std::vector<double>(size_t(p_.batch * p_.hidden), 0.0));
    return zeros_;
  }

  // GRU with linear_before_reset: Rb's hidden-gate third is added inside r * (...), not up front.
  std::string rbMask() {
    const int64_t H = p_.hidden;
    std::vector<double> m(size_t(3 * H), 1.0);
    for (int64_t k = 2 * H; k < 3 * H; ++k)
      m[size_t(k)] = 0.0;
    return addFloatConstant(g_, op_.name + "_rbmask", t_, {3 * H}, m);
  }

  void run() {
    const std::string xs = p_.layout ? transpose(op_.inputs[0], {1, 0, 2}) : op_.inputs[0]; // [T, B, I]
    if (op_.hasInput(4) && !fullLength(g_, op_, p_)) {
      lengths_ = reshape(ops_.cast(op_.inputs[4], DType::I64), {p_.batch, 1});
    }
    std::vector<std::string> ys, hFinal, cFinal;
    for (int64_t d = 0; d < p_.dirs; ++d) {
      std::string h, c;
      const std::vector<std::string> hs = direction(d, xs, h, c);
      ys.push_back(reshape(stack(hs), {p_.seq, 1, p_.batch, p_.hidden}));
      hFinal.push_back(h);
      cFinal.push_back(c);
    }
    ir::Attributes axis1;
    axis1.set("axis", int64_t(1));
    auto output = [&](size_t i) { return i < op_.outputs.size() ? op_.outputs[i] : std::string(); };
    if (!output(0).empty()) {
      const std::string y = ys.size() == 1 ? ys[0] : add("Concat", ys, axis1); // [T, D, B, H]
      if (p_.layout)
        add("Transpose", {y}, perm({2, 0, 1, 3}), output(0));
      else
        add("Identity", {y}, {}, output(0));
    }
    for (size_t k : {size_t(1), size_t(2)}) {
      if (output(k).empty())
        continue;
      const std::string s = stack(k == 1 ? hFinal : cFinal); // [D, B, H]
      if (p_.layout)
        add("Transpose", {s}, perm({1, 0, 2}), output(k));
      else
        add("Identity", {s}, {}, output(k));
    }
  }

  size_t next() const { return ops_.next(); }

private:
  static ir::Attributes perm(std::vector<int64_t> p) {
    ir::Attributes a;
    a.set("perm", std::move(p));
    return a;
  }

  ir::Graph &g_;
  const ir::Op &op_;
  const ir::RecurrentParams &p_;
  OpInserter ops_;
  DType t_;
  std::string lengths_; // sequence_lens as int64 [B, 1], when some sequence may be shorter
  std::string zeros_;
};

// Whether the unrolled form replaces the codelet for `op`.
bool unroll(const ir::Ir &ir, const ir::Graph &g, const ir::Op &op) {
  if (op.type != "RNN" && op.type != "GRU" && op.type != "LSTM")
    return false;
  const ir::RecurrentParams p = ir::recurrentParams(op, g);
  uint64_t bytes = 0;
  for (const std::string &in : op.inputs)
    if (!in.empty())
      bytes += g.tensor(in).info.bytes();
  bytes += uint64_t(p.seq * p.dirs * p.batch * p.hidden) * dtypeSize(g.tensor(op.inputs[0]).info.dtype);
  return ir.training.has_value() || bytes > kMaxOneTileBytes;
}

} // namespace

size_t decomposeRecurrent(ir::Ir &ir) {
  const size_t count = replaceOps(
      ir, [&ir](const ir::Graph &g, const ir::Op &op) { return isOnnxOp(op) && unroll(ir, g, op); },
      [](ir::Graph &g, size_t i, const Replaced &r) {
        const ir::RecurrentParams p = ir::recurrentParams(r.op, g); // its inputs are still in the graph
        Unroller u(g, i, r.op, p);
        u.run();
        return u.next() - i;
      });
  if (count)
    log::get("passes")->debug("rnn-decomposition: {} recurrent ops unrolled over time", count);
  return count;
}

} // namespace popc::passes
