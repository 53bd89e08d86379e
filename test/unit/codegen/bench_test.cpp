// Host speed of the generated matmul and conv code (hidden: run with
// `codegen_tests "[.bench]"`). Shapes: the brief's whole-layer ResNet-50 shapes
// and the small per-vertex shapes compiler/lib actually produces for ResNet-50
// (1-9 output channels, 1-8 output rows per vertex).
#include "test/unit/codegen/jit_helper.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

struct BenchConv {
  uint32_t ic, oc, h, w;          // input channels, output channels, image size
  uint32_t outRows, k, stride;    // rows of the band (from row 0 or mid-image), square kernel
  bool midBand;                   // band in the middle of the image (no row padding)
};

ConvSpec convSpec(const BenchConv &c) {
  ConvSpec s;
  s.inChannels = c.ic;
  s.outChannels = c.oc;
  s.inHeight = c.h;
  s.inWidth = c.w;
  int32_t pad = int32_t(c.k / 2);
  uint32_t fullOutH = (c.h + 2 * pad - c.k) / c.stride + 1;
  s.outWidth = (c.w + 2 * pad - c.k) / c.stride + 1;
  uint32_t outRowBegin = c.midBand ? (fullOutH - c.outRows) / 2 : 0;
  s.outRows = c.outRows;
  s.kernelH = s.kernelW = c.k;
  s.strideH = s.strideW = c.stride;
  s.padLeft = pad;
  // Slab-local rows, as compiler/lib emits them: the field holds exactly the
  // in-image rows the band reads.
  int64_t first = std::max<int64_t>(int64_t(outRowBegin) * c.stride - pad, 0);
  int64_t last = std::min<int64_t>(int64_t(outRowBegin + c.outRows - 1) * c.stride - pad + c.k - 1, c.h - 1);
  s.inHeight = s.inRows = uint32_t(last - first + 1);
  s.padTop = int32_t(pad + first - int64_t(outRowBegin) * c.stride);
  s.hasBias = true;
  s.relu = true;
  return s;
}

} // namespace

TEST_CASE("host throughput of matmul and conv", "[.bench]") {
  VertexCodegen cg;
  std::vector<std::pair<uint32_t, double>> runs; // vertex index, flops per call
  MatMulSpec mm;
  mm.m = mm.n = mm.k = 64;
  runs.emplace_back(cg.getOrCreate(mm), 2.0 * 64 * 64 * 64);
  mm.transB = true;
  runs.emplace_back(cg.getOrCreate(mm), 2.0 * 64 * 64 * 64);
  const std::vector<BenchConv> shapes = {
      {16, 16, 28, 28, 28, 3, 1, false},  // the original bench shape (whole image)
      {64, 64, 56, 56, 8, 3, 1, true},    // brief: 64->64 3x3 on a 56x8 band
      {256, 64, 56, 56, 4, 1, 1, true},   // brief: 256->64 1x1 on a 56x4 band
      {512, 512, 7, 7, 7, 3, 1, false},   // brief: 512->512 3x3 on 7x7
      {128, 128, 28, 28, 4, 3, 2, true},  // brief: 128->128 3x3 stride 2
      {22, 2, 56, 56, 1, 3, 1, false},    // ResNet vertex: layer1 3x3, top row
      {22, 2, 56, 56, 1, 3, 1, true},     // ResNet vertex: layer1 3x3, mid row
      {86, 3, 56, 56, 1, 1, 1, true},     // ResNet vertex: layer1 1x1
      {128, 4, 28, 28, 1, 1, 1, true},    // ResNet vertex: layer2 1x1
      {32, 2, 28, 28, 1, 3, 1, true},     // ResNet vertex: layer2 3x3
      {32, 2, 14, 14, 2, 3, 1, true},     // ResNet vertex: layer3 3x3
      {47, 2, 14, 14, 4, 3, 2, false},    // ResNet vertex: layer4 3x3 stride 2
      {37, 1, 7, 7, 7, 3, 1, false},      // ResNet vertex: layer4 3x3 7x7
      {171, 3, 7, 7, 2, 1, 1, false},     // ResNet vertex: layer4 1x1
      {3, 1, 224, 224, 1, 7, 2, true},    // ResNet vertex: stem 7x7 stride 2
  };
  for (const BenchConv &c : shapes) {
    ConvSpec s = convSpec(c);
    runs.emplace_back(cg.getOrCreate(s), 2.0 * s.outChannels * s.outRows * s.outWidth * s.inChannels * c.k * c.k);
  }
  const Bytes bitcode = cg.finish();
  // POPC_BENCH_BITCODE=file.bc keeps the module for inspection (opt/llc -mcpu=native).
  if (const char *path = std::getenv("POPC_BENCH_BITCODE"))
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bitcode.data()), std::streamsize(bitcode.size()));
  auto t0 = std::chrono::steady_clock::now();
  JitModule jit(bitcode, cg.vertexTypes());
  WARN("JIT (O3 + codegen) of " << runs.size() << " vertices: "
                                << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()
                                << " s");
  std::mt19937 rng(1);
  for (auto [index, flops] : runs) {
    const VertexTypeInfo &vt = cg.vertexTypes()[index];
    std::vector<uint32_t> offsets;
    size_t total = 0;
    for (const auto &f : vt.fields) {
      offsets.push_back(uint32_t(total));
      total += (f.bytes + 63) / 64 * 64;
    }
    std::vector<float> tile = randomVector<float>(total / 4, rng);
    auto fn = jit.lookup(vt.symbol);
    auto call = [&](int reps) {
      auto start = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r)
        fn(reinterpret_cast<uint8_t *>(tile.data()), offsets.data());
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / reps;
    };
    double once = call(1);
    int reps = int(std::clamp(0.05 / std::max(once, 1e-9), 1.0, 1e6));
    std::vector<double> times;
    for (int trial = 0; trial < 7; ++trial)
      times.push_back(call(reps));
    std::sort(times.begin(), times.end());
    double t = times[times.size() / 2];
    // Cold: like the runtime, one call per tile over many tiles whose memory
    // (>= 64 MiB in all) was last written long ago, so inputs come from L3/DRAM.
    const size_t copies = std::max<size_t>(4, (64u << 20) / total);
    std::vector<float> many(copies * total / 4);
    for (size_t c = 0; c < copies; ++c)
      std::copy(tile.begin(), tile.end(), many.begin() + c * total / 4);
    std::vector<double> cold;
    for (int trial = 0; trial < 5; ++trial) {
      auto start = std::chrono::steady_clock::now();
      for (size_t c = 0; c < copies; ++c)
        fn(reinterpret_cast<uint8_t *>(many.data() + c * total / 4), offsets.data());
      cold.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / copies);
    }
    std::sort(cold.begin(), cold.end());
    double tc = cold[cold.size() / 2];
    std::cout << "bench " << vt.name << ": " << flops / t / 1e9 << " GFLOP/s hot, " << flops / tc / 1e9
              << " cold; " << t * 1e6 << " / " << tc * 1e6 << " us/call (median)\n";
  }
}
