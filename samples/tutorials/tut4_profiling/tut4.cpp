// Tutorial 4: profiling output. ((m1 * m2) * m3) with poplin::matMul, checked
// against the host, then the execution profile summary.
#include <popc/poplar.hpp>
#include <popc/poplin.hpp>

#include <cmath>
#include <iostream>
#include <vector>

using namespace popc::api;
using namespace popc::api::program;

int main() {
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  poplin::addCodelets(graph);

  const std::size_t M = 90, K = 60, N = 45, P = 30;
  Tensor m1 = graph.addVariable(FLOAT, {M, K}, "m1");
  Tensor m2 = graph.addVariable(FLOAT, {K, N}, "m2");
  Tensor m3 = graph.addVariable(FLOAT, {N, P}, "m3");
  mapLinearly(graph, m1);
  mapLinearly(graph, m2);
  mapLinearly(graph, m3);
  graph.createHostWrite("m1", m1);
  graph.createHostWrite("m2", m2);
  graph.createHostWrite("m3", m3);

  Sequence prog;
  Tensor m4 = poplin::matMul(graph, m1, m2, prog, "m4");
  Tensor m5 = poplin::matMul(graph, m4, m3, prog, "m5");
  graph.createHostRead("m5", m5);

  Engine engine(graph, prog);
  engine.load(device);

  std::vector<float> h1(M * K), h2(K * N), h3(N * P), h5(M * P);
  for (std::size_t i = 0; i < h1.size(); ++i)
    h1[i] = float(i % 7) - 3;
  for (std::size_t i = 0; i < h2.size(); ++i)
    h2[i] = float(i % 5) * 0.5f;
  for (std::size_t i = 0; i < h3.size(); ++i)
    h3[i] = float(i % 3) - 1;
  engine.writeTensor("m1", h1.data());
  engine.writeTensor("m2", h2.data());
  engine.writeTensor("m3", h3.data());
  engine.run(0);
  engine.readTensor("m5", h5.data());

  bool ok = true;
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t j = 0; j < P; ++j) {
      double e = 0;
      for (std::size_t n = 0; n < N; ++n) {
        double m4 = 0;
        for (std::size_t k = 0; k < K; ++k)
          m4 += double(h1[i * K + k]) * h2[k * N + n];
        e += m4 * h3[n * P + j];
      }
      ok &= std::abs(h5[i * P + j] - e) <= 1e-4 * std::max(1.0, std::abs(e));
    }
  std::cout << (ok ? "Matrix product OK" : "Matrix product WRONG") << "\n\n";
  engine.printProfileSummary(std::cout);
  return ok ? 0 : 1;
}
