// TfIdfVectorizer (integer pools) as comparisons popc lowers, following ORT:
// for each n-gram length n in [min_gram_length, max_gram_length] and skip s
// in [0, max_skip_count] (one pass for unigrams), the n-gram starting at i is
// x[i], x[i + (s+1)], ..., x[i + (n-1)(s+1)]. Its matches against the pool's
// n-grams of that length are Equal/And of n shifted Slices of X against the
// pool's columns, summed over i and s: counts [B, pool n-grams]. The mode
// weighs them (TF: counts, IDF: weight if counted, TFIDF: count * weight) and
// a MatMul by a one-hot matrix puts each pool n-gram in its ngram_indexes column.
#include "compiler/passes/pass_utils.h"
#include "compiler/passes/passes.h"

#include <algorithm>
#include <cstring>

namespace popc::passes {

namespace {

class TfIdf {
public:
  TfIdf(ir::Graph &g, size_t at, const ir::Op &op) : g_(g), op_(op), ops_(g, at, op.name, op.ipu) {}

  std::string add(const std::string &type, std::vector<std::string> in, ir::Attributes a = {}, std::string out = "") {
    return ops_.add(type, std::move(in), std::move(out), std::move(a));
  }
  std::string i64(const std::vector<int64_t> &v) { return addInt64Constant(g_, op_.name + "_c", v); }
  std::string floats(Shape shape, const std::vector<double> &v) {
    return addFloatConstant(g_, op_.name + "_c", DType::F32, std::move(shape), v);
  }
  // Pool values as a constant of X's integer type, shape [1, 1, G].
  std::string pool(const std::vector<int64_t> &v, DType t) {
    std::vector<uint8_t> data(v.size() * dtypeSize(t));
    for (size_t i = 0; i < v.size(); ++i) {
      if (t == DType::I32) {
        const auto x = int32_t(v[i]);
        std::memcpy(data.data() + 4 * i, &x, 4);
      } else {
        std::memcpy(data.data() + 8 * i, &v[i], 8);
      }
    }
    return addConstant(g_, op_.name + "_pool", {t, {1, 1, int64_t(v.size())}}, data);
  }
  // Columns [begin, begin + length) of x [B, T], as [B, length, 1].
  std::string window(const std::string &x, int64_t begin, int64_t length, int64_t batch) {
    return add("Reshape", {ops_.slice(x, 1, begin, begin + length), i64({batch, length, 1})});
  }
  // Sum over axis 1 of [B, L, G] matches: [B, G].
  std::string sumOverPositions(const std::string &x) { return ops_.reduce("ReduceSum", x, {1}, false); }
  size_t next() const { return ops_.next(); }

private:
  ir::Graph &g_;
  const ir::Op &op_;
  OpInserter ops_;
};

size_t decompose(ir::Graph &g, size_t index, const ir::Op &op, const ir::TensorInfo &out) {
  const ir::TensorInfo &xi = g.tensor(op.inputs[0]).info;
  const int64_t B = xi.shape.size() == 2 ? xi.shape[0] : 1, T = xi.shape.back();
  const int64_t lo = op.attrs.getInt("min_gram_length", 1), hi = op.attrs.getInt("max_gram_length", 1);
  const int64_t maxSkip = op.attrs.getInt("max_skip_count", 0);
  const std::string mode = op.attrs.getString("mode", "TF");
  const std::vector<int64_t> starts = op.attrs.getInts("ngram_counts"), columns = op.attrs.getInts("ngram_indexes");
  const std::vector<int64_t> poolValues = op.attrs.getInts("pool_int64s");
  const std::vector<double> weights = op.attrs.getFloats("weights");
  const int64_t C = out.shape.back();
  TfIdf t(g, index, op);
  const std::string x = t.add("Reshape", {op.inputs[0], t.i64({B, T})});
  ir::Attributes toFloat;
  toFloat.set("to", int64_t(1));
  std::string result;
  int64_t ngram = 0; // index of the first pool n-gram of length n
  for (int64_t n = 1; n <= int64_t(starts.size()); ++n) {
    const int64_t begin = starts[size_t(n - 1)];
    const int64_t end = n < int64_t(starts.size()) ? starts[size_t(n)] : int64_t(poolValues.size());
    const int64_t G = end > begin ? (end - begin) / n : 0;
    if (n >= lo && n <= hi && G > 0) {
      // pool n-gram j's k-th item: poolValues[begin + j*n + k], as a row [1, 1, G] per k.
      std::vector<std::string> items;
      for (int64_t k = 0; k < n; ++k) {
        std::vector<int64_t> column;
        for (int64_t j = 0; j < G; ++j)
          column.push_back(poolValues[size_t(begin + j * n + k)]);
        items.push_back(t.pool(column, xi.dtype));
      }
      std::string counts;
      for (int64_t s = 0; s <= (n == 1 ? 0 : maxSkip); ++s) {
        const int64_t L = T - (n - 1) * (s + 1); // n-grams that fit
        if (L <= 0)
          break;
        std::string match;
        for (int64_t k = 0; k < n; ++k) {
          const std::string eq = t.add("Equal", {t.window(x, k * (s + 1), L, B), items[size_t(k)]});
          match = match.empty() ? eq : t.add("And", {match, eq});
        }
        const std::string found = t.sumOverPositions(t.add("Cast", {match}, toFloat));
        counts = counts.empty() ? found : t.add("Add", {counts, found});
      }
      if (!counts.empty()) {
        std::vector<double> w(size_t(G), 1.0), onehot(size_t(G * C), 0.0);
        for (int64_t j = 0; j < G; ++j) {
          if (!weights.empty())
            w[size_t(j)] = weights[size_t(ngram + j)];
          onehot[size_t(j * C + columns[size_t(ngram + j)])] = 1.0;
        }
        if (mode == "IDF")
          counts = t.add("Mul", {t.add("Min", {counts, t.floats({}, {1.0})}), t.floats({G}, w)});
        else if (mode == "TFIDF")
          counts = t.add("Mul", {counts, t.floats({G}, w)});
        const std::string part = t.add("MatMul", {counts, t.floats({G, C}, onehot)});
        result = result.empty() ? part : t.add("Add", {result, part});
      }
    }
    ngram += G;
  }
  if (result.empty()) // nothing to count: zeros
    result = t.floats({B, C}, std::vector<double>(size_t(B * C), 0.0));
  t.add("Reshape", {result, t.i64(out.shape)}, {}, op.outputs[0]);
  return t.next() - index;
}

} // namespace

size_t decomposeTfIdf(ir::Ir &ir) { return rewriteOpsOfType(ir, "TfIdfVectorizer", "tfidf-decomposition", decompose); }

} // namespace popc::passes
