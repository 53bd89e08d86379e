// Det and DFT as ops popc lowers:
//   Det of [.., n, n] (n <= 4): Leibniz's sum over permutations of products of
//   elements, each element a Gather of the flattened matrix (at most 24 terms).
//   DFT along a signal axis: the real and imaginary parts, moved to the last
//   axis, times constant cos/sin matrices [n_in, n_out] (dft_length truncates
//   or zero-pads; onesided keeps n/2 + 1 frequencies; inverse conjugates and
//   scales by 1/n), then stacked as [.., 2].
//   STFT: the frames as one Gather of constant sample indices [frames, length],
//   times the window, then the DFT above along the frame axis.
//   MelWeightMatrix (all inputs constant): the matrix, computed here as ONNX's
//   reference does, becomes a constant.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"
#include "support/log.h"

#include "support/error.h"

#include <algorithm>
#include <cstring>
#include <cmath>
#include <numeric>

namespace popc::passes {

namespace {

std::string int64s(ir::Graph &g, const ir::Op &op, const std::vector<int64_t> &v) {
  return addInt64Constant(g, op.name + "_c", v);
}

size_t decomposeDet(ir::Graph &g, size_t index, const ir::Op &op) {
  const ir::TensorInfo x = g.tensor(op.inputs[0]).info;
  const int64_t n = x.shape.back();
  Shape flat(x.shape.begin(), x.shape.end() - 2);
  flat.push_back(n * n);
  OpInserter ops(g, index, op.name, op.ipu);
  const std::string m = ops.add("Reshape", {op.inputs[0], int64s(g, op, flat)});
  ir::Attributes last;
  last.set("axis", int64_t(-1));
  std::vector<std::string> element(size_t(n * n));
  for (int64_t e = 0; e < n * n; ++e)
    element[size_t(e)] = ops.add("Gather", {m, addInt64Constant(g, op.name + "_at", {e}, true)}, "", last);
  std::vector<int64_t> perm(static_cast<size_t>(n), 0);
  std::iota(perm.begin(), perm.end(), 0);
  std::string det;
  do {
    int64_t inversions = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i + 1; j < n; ++j)
        inversions += perm[size_t(i)] > perm[size_t(j)];
    std::string term = element[size_t(perm[0])];
    for (int64_t i = 1; i < n; ++i)
      term = ops.add("Mul", {term, element[size_t(i * n + perm[size_t(i)])]});
    det = det.empty() ? (inversions % 2 ? ops.add("Neg", {term}) : term)
                      : ops.add(inversions % 2 ? "Sub" : "Add", {det, term});
  } while (std::next_permutation(perm.begin(), perm.end()));
  ops.add("Identity", {det}, op.outputs[0]);
  return ops.next() - index;
}

size_t decomposeDft(ir::Graph &g, size_t index, const ir::Op &op, const ir::TensorInfo &out) {
  const ir::TensorInfo x = g.tensor(op.inputs[0]).info;
  const int64_t r = int64_t(x.shape.size());
  int64_t axis = op.attrs.getInt("axis", 1);
  if (axis < 0)
    axis += r;
  const bool inverse = op.attrs.getInt("inverse", 0) != 0, complex = x.shape.back() == 2;
  const int64_t nIn = x.shape[size_t(axis)], nOut = out.shape[size_t(axis)];
  const int64_t length = op.hasInput(1) ? int64_t(constantAsDoubles(g.tensor(op.inputs[1])).at(0)) : nIn;
  // X[k] = sum_t x[t] e^(-+2 pi i k t / N): C = cos, S = -+sin (times 1/N when inverse).
  std::vector<double> cosine(size_t(nIn * nOut), 0.0), sine(size_t(nIn * nOut), 0.0);
  const double scale = inverse ? 1.0 / double(length) : 1.0, sign = inverse ? 1.0 : -1.0;
  for (int64_t t = 0; t < std::min(nIn, length); ++t)
    for (int64_t k = 0; k < nOut; ++k) {
      const double angle = 2.0 * M_PI * double((k * t) % length) / double(length);
      cosine[size_t(t * nOut + k)] = scale * std::cos(angle);
      sine[size_t(t * nOut + k)] = scale * sign * std::sin(angle);
    }
  OpInserter ops(g, index, op.name, op.ipu);
  const std::string C = addFloatConstant(g, op.name + "_cos", x.dtype, {nIn, nOut}, cosine);
  const std::string S = addFloatConstant(g, op.name + "_sin", x.dtype, {nIn, nOut}, sine);
  // The signal axis last (of the rank r-1 parts), and back afterwards.
  std::vector<int64_t> perm, back(size_t(r - 1));
  for (int64_t d = 0; d < r - 1; ++d)
    if (d != axis)
      perm.push_back(d);
  perm.push_back(axis);
  for (size_t d = 0; d < perm.size(); ++d)
    back[size_t(perm[d])] = int64_t(d);
  const bool moved = axis != r - 2;
  ir::Attributes last, toEnd, fromEnd;
  last.set("axis", int64_t(-1));
  toEnd.set("perm", perm);
  fromEnd.set("perm", back);
  auto part = [&](int64_t which) {
    std::string p = ops.add("Gather", {op.inputs[0], addInt64Constant(g, op.name + "_part", {which}, true)}, "", last);
    return moved ? ops.add("Transpose", {p}, "", toEnd) : p;
  };
  const std::string re = part(0);
  // (re + i im)(C + i S) = (re C - im S) + i (re S + im C)
  std::string yr = ops.add("MatMul", {re, C}), yi = ops.add("MatMul", {re, S});
  if (complex) {
    const std::string im = part(1);
    yr = ops.add("Sub", {yr, ops.add("MatMul", {im, S})});
    yi = ops.add("Add", {yi, ops.add("MatMul", {im, C})});
  }
  Shape half = out.shape;
  half.back() = 1;
  auto finish = [&](const std::string &y) {
    return ops.add("Reshape", {moved ? ops.add("Transpose", {y}, "", fromEnd) : y, int64s(g, op, half)});
  };
  ir::Attributes concat;
  concat.set("axis", r - 1);
  ops.add("Concat", {finish(yr), finish(yi)}, op.outputs[0], concat);
  return ops.next() - index;
}

double scalarOf(const ir::Graph &g, const std::string &name) { return constantAsDoubles(g.tensor(name)).at(0); }

size_t decomposeStft(ir::Graph &g, size_t index, const ir::Op &op, const ir::TensorInfo &out) {
  const int64_t step = int64_t(scalarOf(g, op.inputs[1])), frames = out.shape[1];
  const int64_t length = op.hasInput(3) ? int64_t(scalarOf(g, op.inputs[3])) : g.tensor(op.inputs[2]).info.shape[0];
  std::vector<int64_t> samples;
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t t = 0; t < length; ++t)
      samples.push_back(f * step + t);
  std::vector<uint8_t> bytes(samples.size() * 8);
  std::memcpy(bytes.data(), samples.data(), bytes.size());
  OpInserter ops(g, index, op.name, op.ipu);
  ir::Attributes time;
  time.set("axis", int64_t(1));
  // [batch, frames, length, 1|2]
  std::string framesOf = ops.add(
      "Gather", {op.inputs[0], addConstant(g, op.name + "_frames", {DType::I64, {frames, length}}, std::move(bytes))},
      "", time);
  if (op.hasInput(2))
    framesOf = ops.add("Mul", {framesOf, ops.add("Reshape", {op.inputs[2], int64s(g, op, {1, 1, length, 1})})});
  ir::Op dft;
  dft.type = "DFT";
  dft.name = op.name;
  dft.ipu = op.ipu;
  dft.inputs = {framesOf};
  dft.outputs = op.outputs;
  dft.attrs.set("axis", int64_t(2));
  dft.attrs.set("onesided", op.attrs.getInt("onesided", 1));
  const size_t at = ops.next();
  return at - index + decomposeDft(g, at, dft, out);
}

size_t replaceMelWeightMatrix(ir::Graph &g, size_t index, const ir::Op &op, const ir::TensorInfo &out) {
  const int64_t bins = int64_t(scalarOf(g, op.inputs[0])), length = int64_t(scalarOf(g, op.inputs[1]));
  const double rate = scalarOf(g, op.inputs[2]), lower = scalarOf(g, op.inputs[3]), upper = scalarOf(g, op.inputs[4]);
  const int64_t spectrum = length / 2 + 1;
  const double lowMel = 2595 * std::log10(1 + lower / 700), highMel = 2595 * std::log10(1 + upper / 700);
  const double melStep = (highMel - lowMel) / double(bins + 2);
  std::vector<int64_t> edge(size_t(bins + 2));
  for (int64_t i = 0; i < bins + 2; ++i) {
    const double hz = 700 * (std::pow(10.0, (double(i) * melStep + lowMel) / 2595) - 1);
    edge[size_t(i)] = int64_t(std::floor(double(length + 1) * hz / rate));
  }
  std::vector<double> w(size_t(spectrum * bins), 0.0);
  auto at = [&](int64_t j, int64_t i) -> double & {
    if (j < 0 || j >= spectrum)
      fail("{} '{}': a mel band reaches spectrum bin {} of {}: check sample_rate and the edge frequencies",
           op.type, op.name, j, spectrum);
    return w[size_t(j * bins + i)];
  };
  for (int64_t i = 0; i < bins; ++i) {
    const int64_t left = edge[size_t(i)], centre = edge[size_t(i + 1)], right = edge[size_t(i + 2)];
    if (centre == left)
      at(centre, i) = 1;
    else
      for (int64_t j = left; j <= centre; ++j)
        at(j, i) = double(j - left) / double(centre - left);
    if (right > centre)
      for (int64_t j = centre; j < right; ++j)
        at(j, i) = double(right - j) / double(right - centre);
  }
  OpInserter ops(g, index, op.name, op.ipu);
  ops.add("Identity", {addFloatConstant(g, op.name + "_matrix", out.dtype, out.shape, w)}, op.outputs[0]);
  return ops.next() - index;
}

} // namespace

size_t decomposeLinalg(ir::Ir &ir) {
  static const std::set<std::string> types{"Det", "DFT", "STFT", "MelWeightMatrix"};
  const size_t count = replaceOps(
      ir, [](const ir::Graph &, const ir::Op &op) { return types.count(op.type) > 0; },
      [](ir::Graph &g, size_t i, const Replaced &r) {
        return r.op.type == "Det"    ? decomposeDet(g, i, r.op)
               : r.op.type == "DFT"  ? decomposeDft(g, i, r.op, r.output(0))
               : r.op.type == "STFT" ? decomposeStft(g, i, r.op, r.output(0))
                                     : replaceMelWeightMatrix(g, i, r.op, r.output(0));
      });
  if (count)
    log::get("passes")->debug("linalg-decomposition: {} Det/DFT/STFT/MelWeightMatrix ops", count);
  return count;
}

} // namespace popc::passes
