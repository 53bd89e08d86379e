#include "compiler/passes/pass_manager.h"
#include "compiler/passes/passes.h"

#include "test_graph.h"

#include <catch2/catch.hpp>

#include <cmath>

using namespace popc;
using namespace popc::passes;
using namespace popc::passes::test;

namespace {

constexpr int64_t N = 1, C = 2, H = 5, W = 5, M = 3, K = 3;

std::vector<float> ramp(size_t n, float scale, float offset) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = offset + scale * float((i * 7) % 11) - 0.3f * float(i % 3);
  return v;
}

// Reference NCHW conv, stride 1, pad 1, group 1, in double.
std::vector<double> refConv(const std::vector<float> &x, const std::vector<float> &w,
                            const std::vector<float> &b) {
  std::vector<double> y(size_t(N * M * H * W), 0.0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t oh = 0; oh < H; ++oh)
      for (int64_t ow = 0; ow < W; ++ow) {
        double acc = b.empty() ? 0.0 : b[size_t(m)];
        for (int64_t c = 0; c < C; ++c)
          for (int64_t kh = 0; kh < K; ++kh)
            for (int64_t kw = 0; kw < K; ++kw) {
              int64_t ih = oh + kh - 1, iw = ow + kw - 1;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W)
                continue;
              acc += double(x[size_t((c * H + ih) * W + iw)]) *
                     double(w[size_t(((m * C + c) * K + kh) * K + kw)]);
            }
        y[size_t((m * H + oh) * W + ow)] = acc;
      }
  return y;
}

const std::vector<float> kScale = {1.5f, -0.5f, 2.0f}, kBias = {0.1f, 0.2f, -0.3f},
                         kMean = {0.5f, -1.0f, 0.25f}, kVar = {0.9f, 2.0f, 0.01f};
constexpr double kEps = 1e-3;

ir::Attributes convAttrs() {
  ir::Attributes a;
  a.set("pads", std::vector<int64_t>{1, 1, 1, 1});
  a.set("kernel_shape", std::vector<int64_t>{K, K});
  return a;
}

void addConvBn(ir::Ir &ir, bool withBias) {
  ir::Graph &g = ir.main;
  addInput(g, "x", {N, C, H, W});
  addF32(g, "w", {M, C, K, K}, ramp(size_t(M * C * K * K), 0.1f, -0.4f));
  std::vector<std::string> convIn = {"x", "w"};
  if (withBias) {
    addF32(g, "b", {M}, {0.3f, -0.2f, 0.05f});
    convIn.push_back("b");
  }
  addF32(g, "scale", {M}, kScale);
  addF32(g, "bias", {M}, kBias);
  addF32(g, "mean", {M}, kMean);
  addF32(g, "var", {M}, kVar);
  addOp(g, "Conv", "conv", convIn, {"conv_out"}, convAttrs());
  ir::Attributes bn;
  bn.set("epsilon", kEps);
  addOp(g, "BatchNormalization", "bn", {"conv_out", "scale", "bias", "mean", "var"}, {"y"}, bn);
  g.outputs = {"y"};
}

} // namespace

TEST_CASE("conv+bn folding matches the unfolded computation", "[passes]") {
  for (bool withBias : {false, true}) {
    ir::Ir ir;
    addConvBn(ir, withBias);
    const std::vector<float> x = ramp(size_t(N * C * H * W), 0.2f, -1.0f);
    const std::vector<float> w = values<float>(ir.main.tensor("w"));
    const std::vector<float> b = withBias ? values<float>(ir.main.tensor("b")) : std::vector<float>{};

    // Reference: conv then BN, in double.
    std::vector<double> expect = refConv(x, w, b);
    for (size_t i = 0; i < expect.size(); ++i) {
      size_t m = i / size_t(H * W);
      expect[i] = (expect[i] - kMean[m]) / std::sqrt(double(kVar[m]) + kEps) * kScale[m] + kBias[m];
    }

    runPasses(ir, {});
    const ir::Graph &g = ir.main;
    REQUIRE(opTypes(g) == std::vector<std::string>{"Conv"});
    const ir::Op &conv = *g.ops()[0];
    CHECK(conv.outputs == std::vector<std::string>{"y"});
    REQUIRE(conv.inputs.size() == 3);
    std::vector<double> got =
        refConv(x, values<float>(g.tensor(conv.inputs[1])), values<float>(g.tensor(conv.inputs[2])));
    for (size_t i = 0; i < got.size(); ++i)
      CHECK(got[i] == Approx(expect[i]).epsilon(1e-5).margin(1e-5));
    // The original weights and BN parameters were collected by DCE.
    for (const char *gone : {"w", "scale", "bias", "mean", "var", "conv_out"})
      CHECK_FALSE(g.hasTensor(gone));
  }
}

TEST_CASE("conv + per-channel Mul + Add folds into the conv", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {N, C, H, W});
  addF32(g, "w", {M, C, K, K}, ramp(size_t(M * C * K * K), 0.1f, -0.4f));
  addF32(g, "s", {M, 1, 1}, {2, -1, 0.5f});
  addF32(g, "t", {1, M, 1, 1}, {1, 2, 3});
  addOp(g, "Conv", "conv", {"x", "w"}, {"c"}, convAttrs());
  addOp(g, "Mul", "mul", {"s", "c"}, {"cm"});
  addOp(g, "Add", "add", {"cm", "t"}, {"y"});
  g.outputs = {"y"};
  const std::vector<float> x = ramp(size_t(N * C * H * W), 0.2f, -1.0f);
  std::vector<double> expect = refConv(x, values<float>(g.tensor("w")), {});
  const float s[] = {2, -1, 0.5f}, t[] = {1, 2, 3};
  for (size_t i = 0; i < expect.size(); ++i)
    expect[i] = expect[i] * s[i / size_t(H * W)] + t[i / size_t(H * W)];

  CHECK(foldConvBatchNorm(ir) == 2);
  ir::inferGraph(g);
  REQUIRE(opTypes(g) == std::vector<std::string>{"Conv"});
  const ir::Op &conv = *g.ops()[0];
  std::vector<double> got =
      refConv(x, values<float>(g.tensor(conv.inputs[1])), values<float>(g.tensor(conv.inputs[2])));
  for (size_t i = 0; i < got.size(); ++i)
    CHECK(got[i] == Approx(expect[i]).epsilon(1e-5).margin(1e-5));
}

TEST_CASE("conv whose output has two readers is not folded", "[passes]") {
  ir::Ir ir;
  addConvBn(ir, true);
  ir::Graph &g = ir.main;
  addOp(g, "Relu", "side", {"conv_out"}, {"side_out"});
  g.outputs.push_back("side_out");
  CHECK(foldConvBatchNorm(ir) == 0);
}

TEST_CASE("batchnorm decomposition: Mul + Add with [C,1,1] constants", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {2, M, 4, 4});
  addF32(g, "scale", {M}, kScale);
  addF32(g, "bias", {M}, kBias);
  addF32(g, "mean", {M}, kMean);
  addF32(g, "var", {M}, kVar);
  ir::Attributes bn;
  bn.set("epsilon", kEps);
  addOp(g, "BatchNormalization", "bn", {"x", "scale", "bias", "mean", "var"}, {"y"}, bn);
  g.outputs = {"y"};

  CHECK(decomposeBatchNorm(ir) == 1);
  ir::inferGraph(g);
  REQUIRE(opTypes(g) == std::vector<std::string>{"Mul", "Add"});
  const ir::Op &mul = *g.ops()[0], &add = *g.ops()[1];
  CHECK(mul.inputs[0] == "x");
  CHECK(add.inputs[0] == mul.outputs[0]);
  CHECK(add.outputs[0] == "y");
  const ir::Tensor &s = g.tensor(mul.inputs[1]), &t = g.tensor(add.inputs[1]);
  CHECK(s.info.shape == Shape{M, 1, 1});
  CHECK(t.info.shape == Shape{M, 1, 1});
  std::vector<float> sv = values<float>(s), tv = values<float>(t);
  for (size_t c = 0; c < size_t(M); ++c) {
    double sc = kScale[c] / std::sqrt(double(kVar[c]) + kEps);
    CHECK(sv[c] == Approx(sc).epsilon(1e-6));
    CHECK(tv[c] == Approx(kBias[c] - kMean[c] * sc).epsilon(1e-6));
  }
  CHECK(g.tensor("y").info.shape == Shape{2, M, 4, 4});
}

TEST_CASE("batchnorm decomposition: rank-2 input uses [C] constants", "[passes]") {
  ir::Ir ir;
  ir::Graph &g = ir.main;
  addInput(g, "x", {5, M});
  addF32(g, "scale", {M}, kScale);
  addF32(g, "bias", {M}, kBias);
  addF32(g, "mean", {M}, kMean);
  addF32(g, "var", {M}, kVar);
  addOp(g, "BatchNormalization", "bn", {"x", "scale", "bias", "mean", "var"}, {"y"});
  g.outputs = {"y"};
  CHECK(decomposeBatchNorm(ir) == 1);
  ir::inferGraph(g);
  CHECK(g.tensor(g.ops()[0]->inputs[1]).info.shape == Shape{M});
}
