// Tutorial 5: a basic machine learning example — logistic regression trained
// by full-batch gradient descent on the device. MNIST cannot be downloaded
// here, so the data set is synthetic: points in D dimensions labelled by a
// hidden linear rule. The host repeats the same training in float and the
// device's weights must match it.
#include <popc/poplar.hpp>
#include <popc/popnn.hpp>
#include <popc/popops.hpp>
#include <popc/poplin.hpp>

#include <cmath>
#include <cstdint>
#include <iostream>
#include <vector>

using namespace popc::api;
using namespace popc::api::program;

int main() {
  const std::size_t N = 512, D = 8;
  const unsigned epochs = 60;
  const float learningRate = 0.5f;

  // Synthetic data: x uniform in [-1, 1) from a fixed LCG; y = [w_true . x + b_true > 0].
  std::vector<float> x(N * D), y(N);
  uint32_t state = 12345;
  auto uniform = [&] {
    state = state * 1664525u + 1013904223u;
    return float(state >> 8) / float(1u << 24) * 2.0f - 1.0f;
  };
  const float wTrue[D] = {1.5f, -2.0f, 0.5f, 1.0f, -0.75f, 2.5f, -1.25f, 0.25f};
  for (std::size_t i = 0; i < N; ++i) {
    float z = 0.3f;
    for (std::size_t d = 0; d < D; ++d) {
      x[i * D + d] = uniform();
      z += wTrue[d] * x[i * D + d];
    }
    y[i] = z > 0 ? 1.0f : 0.0f;
  }

  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);
  poplin::addCodelets(graph);
  popnn::addCodelets(graph);

  Tensor X = graph.addVariable(FLOAT, {N, D}, "x");
  Tensor Y = graph.addVariable(FLOAT, {N}, "y");
  Tensor w = graph.addVariable(FLOAT, {D}, "weights");
  Tensor b = graph.addVariable(FLOAT, {1}, "bias");
  mapLinearly(graph, X);
  mapLinearly(graph, Y);
  graph.setTileMapping(w, 0);
  graph.setTileMapping(b, 0);
  graph.setInitialValue(w, std::vector<float>(D, 0.0f));
  graph.setInitialValue(b, std::vector<float>{0.0f});
  graph.createHostWrite("x", X);
  graph.createHostWrite("y", Y);
  graph.createHostRead("weights", w);
  graph.createHostRead("bias", b);

  // One gradient-descent step: p = sigmoid(X w + b); w -= lr/N X^T (p - y); b -= lr/N sum(p - y).
  Sequence step;
  Tensor z = popops::add(graph, poplin::matMul(graph, X, w, step, "logits"), b, step, "addBias");
  Tensor p = popnn::nonLinearity(graph, popnn::NonLinearityType::SIGMOID, z, step, "prob");
  Tensor err = popops::sub(graph, p, Y, step, "err");
  Tensor gradW = poplin::matMul(graph, X.transpose(), err, step, "gradW");
  Tensor gradB = popops::reduce(graph, err, {0}, popops::Operation::ADD, step, "gradB");
  popops::scaledAddTo(graph, w, gradW, -learningRate / N, step, "updateW");
  popops::scaledAddTo(graph, b, gradB, -learningRate / N, step, "updateB");

  Engine engine(graph, Repeat(epochs, step));
  engine.load(device);
  engine.writeTensor("x", x.data());
  engine.writeTensor("y", y.data());
  std::cout << "Training logistic regression: " << N << " samples, " << D << " features, " << epochs
            << " epochs\n";
  engine.run(0);
  std::vector<float> hw(D), hb(1);
  engine.readTensor("weights", hw.data());
  engine.readTensor("bias", hb.data());

  // The same training on the host.
  std::vector<float> rw(D, 0.0f);
  float rb = 0;
  for (unsigned e = 0; e < epochs; ++e) {
    std::vector<float> errs(N);
    for (std::size_t i = 0; i < N; ++i) {
      float zz = rb;
      for (std::size_t d = 0; d < D; ++d)
        zz += x[i * D + d] * rw[d];
      errs[i] = 1.0f / (1.0f + std::exp(-zz)) - y[i];
    }
    float gb = 0;
    for (std::size_t i = 0; i < N; ++i)
      gb += errs[i];
    for (std::size_t d = 0; d < D; ++d) {
      float g = 0;
      for (std::size_t i = 0; i < N; ++i)
        g += x[i * D + d] * errs[i];
      rw[d] -= learningRate / N * g;
    }
    rb -= learningRate / N * gb;
  }
  bool match = std::abs(hb[0] - rb) < 1e-3f;
  for (std::size_t d = 0; d < D; ++d)
    match &= std::abs(hw[d] - rw[d]) < 1e-3f;

  std::size_t correct = 0;
  for (std::size_t i = 0; i < N; ++i) {
    float zz = hb[0];
    for (std::size_t d = 0; d < D; ++d)
      zz += x[i * D + d] * hw[d];
    correct += (zz > 0) == (y[i] > 0.5f);
  }
  const double accuracy = 100.0 * double(correct) / double(N);
  std::cout << "Weights:";
  for (float v : hw)
    std::cout << " " << v;
  std::cout << "\nBias: " << hb[0] << "\n";
  std::cout << "Training accuracy: " << accuracy << "%\n";
  std::cout << (match ? "Weights match the host training: OK" : "Weights differ from the host training") << "\n";
  const bool ok = match && accuracy >= 90.0;
  std::cout << (ok ? "Training result OK" : "Training result WRONG") << "\n";
  return ok ? 0 : 1;
}
