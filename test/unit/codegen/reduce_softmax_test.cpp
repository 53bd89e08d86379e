#include "test/unit/codegen/jit_helper.h"

#include "support/error.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

double reduceRef(const std::string &op, const float *row, uint32_t cols) {
  double inf = std::numeric_limits<double>::infinity();
  double acc = op == "Prod" ? 1 : op == "Max" ? -inf : op == "Min" ? inf : 0;
  double mx = -inf;
  for (uint32_t i = 0; i < cols; ++i)
    mx = std::max(mx, double(row[i]));
  for (uint32_t i = 0; i < cols; ++i) {
    double x = row[i];
    if (op == "Sum" || op == "Mean") acc += x;
    else if (op == "SumSquare" || op == "L2") acc += x * x;
    else if (op == "L1") acc += std::abs(x);
    else if (op == "Prod") acc *= x;
    else if (op == "Max") acc = std::max(acc, x);
    else if (op == "Min") acc = std::min(acc, x);
    else if (op == "LogSumExp") acc += std::exp(x - mx);
  }
  if (op == "Mean") return acc / cols;
  if (op == "L2") return std::sqrt(acc);
  if (op == "LogSumExp") return mx + std::log(acc);
  return acc;
}

} // namespace

TEST_CASE("reduce ops match a reference", "[codegen][reduce]") {
  const std::vector<std::string> ops = {"Sum", "Mean", "Max", "Min", "Prod", "SumSquare", "L1", "L2", "LogSumExp"};
  VertexCodegen cg;
  std::vector<std::pair<ReduceSpec, uint32_t>> runs;
  for (const auto &op : ops)
    for (auto [rows, cols] : {std::pair{7u, 133u}, std::pair{1u, 1u}, std::pair{16u, 8u}}) {
      ReduceSpec s{op, DType::F32, rows, cols};
      runs.emplace_back(s, cg.getOrCreate(s));
    }
  JitModule jit(cg);
  std::mt19937 rng(13);
  for (auto &[s, index] : runs) {
    const VertexTypeInfo &vt = cg.vertexTypes()[index];
    INFO(vt.name);
    // Prod over many elements: keep values near 1 so the product stays finite.
    auto in = s.op == "Prod" ? randomVector<float>(size_t(s.rows) * s.cols, rng, 0.9, 1.1)
                             : randomVector<float>(size_t(s.rows) * s.cols, rng, -3, 3);
    std::vector<double> want(s.rows);
    for (uint32_t r = 0; r < s.rows; ++r)
      want[r] = reduceRef(s.op, in.data() + size_t(r) * s.cols, s.cols);
    auto out = jit.run(vt, {toBytes(in), Bytes(s.rows * 4)});
    requireClose(fromBytes<float>(out[1]), want);
  }
}

TEST_CASE("integer reduce and its errors", "[codegen][reduce]") {
  VertexCodegen cg;
  uint32_t sum = cg.getOrCreate(ReduceSpec{"Sum", DType::I64, 2, 5});
  uint32_t mx = cg.getOrCreate(ReduceSpec{"Max", DType::I32, 2, 5});
  CHECK_THROWS_WITH(cg.getOrCreate(ReduceSpec{"Mean", DType::I32, 2, 5}), "codegen: ReduceMean not supported for int32");
  CHECK_THROWS_AS(cg.getOrCreate(ReduceSpec{"Median", DType::F32, 2, 5}), popc::Error);
  JitModule jit(cg);
  std::vector<int64_t> a = {1, 2, 3, 4, 5, -1, -2, -3, -4, -5};
  CHECK(fromBytes<int64_t>(jit.run(cg.vertexTypes()[sum], {toBytes(a), Bytes(16)})[1]) ==
        std::vector<int64_t>{15, -15});
  std::vector<int32_t> b = {1, 9, 3, 4, 5, -7, -2, -3, -4, -5};
  CHECK(fromBytes<int32_t>(jit.run(cg.vertexTypes()[mx], {toBytes(b), Bytes(8)})[1]) == std::vector<int32_t>{9, -2});
}

TEST_CASE("softmax and log-softmax are stable and match a reference", "[codegen][softmax]") {
  VertexCodegen cg;
  std::vector<std::pair<SoftmaxSpec, uint32_t>> runs;
  for (bool log : {false, true})
    for (auto [rows, cols] : {std::pair{5u, 1000u}, std::pair{3u, 7u}, std::pair{1u, 1u}}) {
      SoftmaxSpec s{DType::F32, rows, cols, log};
      runs.emplace_back(s, cg.getOrCreate(s));
    }
  JitModule jit(cg);
  std::mt19937 rng(17);
  for (auto &[s, index] : runs) {
    const VertexTypeInfo &vt = cg.vertexTypes()[index];
    INFO(vt.name);
    // Large logits: a naive exp would overflow.
    auto in = randomVector<float>(size_t(s.rows) * s.cols, rng, 50, 120);
    std::vector<double> want(in.size());
    for (uint32_t r = 0; r < s.rows; ++r) {
      const float *x = in.data() + size_t(r) * s.cols;
      double mx = -std::numeric_limits<double>::infinity(), sum = 0;
      for (uint32_t c = 0; c < s.cols; ++c)
        mx = std::max(mx, double(x[c]));
      for (uint32_t c = 0; c < s.cols; ++c)
        sum += std::exp(x[c] - mx);
      for (uint32_t c = 0; c < s.cols; ++c)
        want[size_t(r) * s.cols + c] = s.log ? x[c] - mx - std::log(sum) : std::exp(x[c] - mx) / sum;
    }
    auto out = jit.run(vt, {toBytes(in), Bytes(in.size() * 4)});
    requireClose(fromBytes<float>(out[1]), want);
  }
}
