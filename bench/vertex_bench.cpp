// popc-vertex-bench: how fast the host runs what poprun-lite runs, against the
// host's own peak. Three tables:
//   peak      fp32 FMA GFLOP/s of one core (widest vectors the CPU has), and
//             of the threads a run uses;
//   vertices  generated matmul and conv vertex code (compiler/codegen, JIT-ed
//             as poprun-lite does: bitcode gate, host O3, memory sandbox) on
//             one tile over and over (hot: operands in L1) and once per tile
//             over the 1,472 tiles of an ipu2 (cold: operands in L3/DRAM, as
//             a run meets them), GFLOP/s and % of one core's peak;
//   steps     a sync (the thread pool's parallelFor over nothing) and an empty
//             superstep (a compute set of do-nothing vertices on every tile).
// It measures; it judges nothing (bench.vertex_smoke runs it with --quick).
#include "compiler/codegen/kernels.h"
#include "runtime/bitcode_gate.h"
#include "runtime/device_memory.h"
#include "runtime/jit.h"
#include "runtime/memory_sandbox.h"
#include "runtime/step_tables.h"
#include "runtime/thread_pool.h"
#include "support/error.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace popc;

namespace {

using Clock = std::chrono::steady_clock;

// Median seconds of `trials` runs of fn(), each after before() (not timed).
double medianSeconds(int trials, const std::function<void()> &fn, const std::function<void()> &before = {}) {
  std::vector<double> t;
  for (int i = 0; i < trials; ++i) {
    if (before)
      before();
    const auto start = Clock::now();
    fn();
    t.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// ---- peak -------------------------------------------------------------------

// Twelve independent accumulator vectors: enough FMAs in flight for two FMA
// pipes of latency 4-6. Compiled for each ISA; the CPU decides which runs.
typedef float Vec16 __attribute__((vector_size(64)));
typedef float Vec8 __attribute__((vector_size(32)));
#define POPC_PEAK_KERNEL(NAME, VEC, LANES, TARGET)                                            \
  __attribute__((target(TARGET), noinline)) float NAME(long iterations) {                     \
    VEC x, y;                                                                                  \
    for (int i = 0; i < LANES; ++i) {                                                          \
      x[i] = 1.0f + 1e-7f * float(i);                                                          \
      y[i] = 0.999999f;                                                                        \
    }                                                                                          \
    /* different starts, so no two chains are the same computation */                        \
    VEC a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4, a5 = x + 5, a6 = x + 6,        \
        a7 = x + 7, a8 = x + 8, a9 = x + 9, a10 = x + 10, a11 = x + 11;                        \
    for (long n = 0; n < iterations; ++n) {                                                    \
      a0 = a0 * y + x, a1 = a1 * y + x, a2 = a2 * y + x, a3 = a3 * y + x;                      \
      a4 = a4 * y + x, a5 = a5 * y + x, a6 = a6 * y + x, a7 = a7 * y + x;                      \
      a8 = a8 * y + x, a9 = a9 * y + x, a10 = a10 * y + x, a11 = a11 * y + x;                  \
    }                                                                                          \
    const VEC sum = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11;               \
    float s = 0;                                                                               \
    for (int i = 0; i < LANES; ++i)                                                            \
      s += sum[i];                                                                             \
    return s;                                                                                  \
  }
POPC_PEAK_KERNEL(peakAvx512, Vec16, 16, "avx512f,fma")
POPC_PEAK_KERNEL(peakAvx2, Vec8, 8, "avx2,fma")
#undef POPC_PEAK_KERNEL

struct Peak {
  std::string isa;
  double perCore = 0; // GFLOP/s
};

Peak measurePeak(bool quick) {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")))
    return {"none (no AVX2+FMA)", 0};
  const long iterations = quick ? 2'000'000 : 20'000'000;
  const int lanes = avx512 ? 16 : 8;
  volatile float sink = 0;
  const double s = medianSeconds(quick ? 3 : 7, [&] { sink = avx512 ? peakAvx512(iterations) : peakAvx2(iterations); });
  (void)sink;
  return {avx512 ? "AVX-512" : "AVX2", double(iterations) * 12 * lanes * 2 / s / 1e9};
}

// ---- vertices ---------------------------------------------------------------

struct ConvShape {
  const char *what;
  uint32_t ic, oc, h, w;       // input channels, output channels, image size
  uint32_t outRows, k, stride; // rows of the band (from row 0 or mid-image), square kernel
  bool midBand;                // band in the middle of the image (no row padding)
};

// The band as compiler/lib cuts it: the field holds exactly the in-image rows
// the band reads.
codegen::ConvSpec convSpec(const ConvShape &c) {
  codegen::ConvSpec s;
  s.inChannels = c.ic;
  s.outChannels = c.oc;
  const int32_t pad = int32_t(c.k / 2);
  const uint32_t fullOutH = (c.h + 2 * pad - c.k) / c.stride + 1;
  s.inWidth = c.w;
  s.outWidth = (c.w + 2 * pad - c.k) / c.stride + 1;
  const uint32_t outRowBegin = c.midBand ? (fullOutH - c.outRows) / 2 : 0;
  s.outRows = c.outRows;
  s.kernelH = s.kernelW = c.k;
  s.strideH = s.strideW = c.stride;
  s.padLeft = pad;
  const int64_t first = std::max<int64_t>(int64_t(outRowBegin) * c.stride - pad, 0);
  const int64_t last = std::min<int64_t>(int64_t(outRowBegin + c.outRows - 1) * c.stride - pad + c.k - 1, c.h - 1);
  s.inHeight = s.inRows = uint32_t(last - first + 1);
  s.padTop = int32_t(pad + first - int64_t(outRowBegin) * c.stride);
  s.hasBias = true;
  s.relu = true;
  return s;
}

struct Case {
  std::string what;
  uint32_t type; // index in the codegen's vertex types
  double flops;  // per call
};

// The vertex module JIT-ed as poprun-lite does, on an ipu2-sized arena.
class Bench {
public:
  explicit Bench(uint32_t tiles) : memory_(tiles, kTileBytes) {}

  void compile(codegen::VertexCodegen &cg) {
    runtime::MemorySandbox sandbox = runtime::DeviceMemory::sandbox();
    std::vector<std::string> entries;
    for (const codegen::VertexTypeInfo &t : cg.vertexTypes()) {
      entries.push_back(t.symbol);
      sandbox.entryFieldCounts[t.symbol] = unsigned(t.fields.size());
    }
    const std::vector<uint8_t> bitcode = cg.finish();
    auto context = std::make_unique<llvm::LLVMContext>();
    auto module = runtime::loadCodeModule(*context, bitcode, "bench module", entries);
    jit_.addModule(std::move(module), std::move(context), "bench module", &sandbox);
  }

  struct Speeds {
    double hot, cold, prefetched; // GFLOP/s
  };
  // GFLOP/s hot, cold, and cold with the next tile's operands asked for
  // ahead as a run does, of one vertex type: random fields at cache-line
  // aligned offsets on every tile.
  Speeds run(const codegen::VertexTypeInfo &vt, double flops, bool quick) {
    std::vector<uint32_t> offsets;
    uint32_t bytes = 0;
    for (const auto &f : vt.fields) {
      if (f.access == codegen::FieldAccess::Immediate) { // a number (a shape parameter), not memory
        offsets.push_back(f.value);
        continue;
      }
      offsets.push_back(bytes);
      bytes += (f.bytes + 63) / 64 * 64;
    }
    if (bytes > kTileBytes)
      throw Error(fmt::format("{}: {} bytes of fields, more than a tile", vt.name, bytes));
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> data(bytes / 4);
    for (float &x : data)
      x = dist(rng);
    for (uint32_t t = 0; t < memory_.numTiles(); ++t)
      std::memcpy(memory_.tile(t), data.data(), bytes);
    const runtime::VertexFn fn = jit_.lookup(vt.symbol, "bench module");
    uint8_t *tile0 = memory_.tile(0);
    fn(tile0, offsets.data());
    const auto warm = Clock::now();
    fn(tile0, offsets.data());
    const double once = std::max(std::chrono::duration<double>(Clock::now() - warm).count(), 1e-8);
    const int reps = int(std::clamp((quick ? 0.005 : 0.05) / once, 1.0, 1e6));
    const double hot = medianSeconds(quick ? 3 : 7, [&] {
                         for (int r = 0; r < reps; ++r)
                           fn(tile0, offsets.data());
                       }) /
                       reps;
    // A run's footprint is hundreds of MB: its tiles' operands come from
    // DRAM, so the caches are flushed (by writing more than they hold) first.
    // The memory fields a run prefetches ahead of a tile (runComputeSet):
    std::vector<std::pair<uint32_t, uint32_t>> spans; // offset, bytes
    int64_t budget = runtime::kPrefetchTileBytes;
    for (size_t i = 0; i < vt.fields.size() && budget > 0; ++i)
      if (vt.fields[i].access != codegen::FieldAccess::Immediate) {
        spans.emplace_back(offsets[i], std::min<uint32_t>(vt.fields[i].bytes, runtime::kPrefetchFieldBytes));
        budget -= spans.back().second;
      }
    auto cold = [&](bool prefetch) {
      return medianSeconds(
                 quick ? 3 : 5,
                 [&] {
                   for (uint32_t t = 0; t < memory_.numTiles(); ++t) {
                     if (prefetch && t + 1 < memory_.numTiles())
                       for (const auto &[offset, n] : spans)
                         runtime::prefetchBytes(memory_.tile(t + 1) + offset, n);
                     fn(memory_.tile(t), offsets.data());
                   }
                 },
                 [&] { std::memset(flush_.data(), int(flush_[0] + 1), flush_.size()); }) /
             memory_.numTiles();
    };
    return {flops / hot / 1e9, flops / cold(false) / 1e9, flops / cold(true) / 1e9};
  }

private:
  static constexpr uint32_t kTileBytes = 638976; // ipu2
  runtime::DeviceMemory memory_;
  runtime::Jit jit_;
  std::vector<uint8_t> flush_ = std::vector<uint8_t>(256 << 20);
};

std::vector<Case> addVertices(codegen::VertexCodegen &cg) {
  std::vector<Case> cases;
  for (uint32_t n : {64u, 16u}) {
    codegen::MatMulSpec mm;
    mm.m = mm.n = mm.k = n;
    cases.push_back({fmt::format("matmul {0}x{0}x{0}", n), cg.getOrCreate(mm), 2.0 * n * n * n});
  }
  const std::vector<ConvShape> shapes = {
      {"conv 64->64 3x3, 56x8 band (whole layer)", 64, 64, 56, 56, 8, 3, 1, true},
      {"conv 256->64 1x1, 56x4 band (whole layer)", 256, 64, 56, 56, 4, 1, 1, true},
      {"conv 64->64 3x3 stride 2, 28x4 band (whole layer)", 64, 64, 28, 28, 4, 3, 2, true},
      {"conv 22->2 3x3, one 56-wide row (ResNet-50 layer1 vertex)", 22, 2, 56, 56, 1, 3, 1, true},
      {"conv 86->3 1x1, one 56-wide row (layer1 vertex)", 86, 3, 56, 56, 1, 1, 1, true},
      {"conv 32->2 3x3, two 14-wide rows (layer3 vertex)", 32, 2, 14, 14, 2, 3, 1, true},
      {"conv 37->1 3x3, 7x7 (layer4 vertex)", 37, 1, 7, 7, 7, 3, 1, false},
      {"conv 3->1 7x7 stride 2, one row (stem vertex)", 3, 1, 224, 224, 1, 7, 2, true},
  };
  for (const ConvShape &c : shapes) {
    const codegen::ConvSpec s = convSpec(c);
    cases.push_back({c.what, cg.getOrCreate(s),
                     2.0 * s.outChannels * s.outRows * s.outWidth * s.inChannels * c.k * c.k});
  }
  return cases;
}

// ---- steps ------------------------------------------------------------------

void emptyVertex(uint8_t *, const uint32_t *) {}

struct StepCosts {
  double syncUs, superstepUs, perVertexNs;
};

// A compute set of `perTile` do-nothing vertices on each of `tiles` tiles,
// planned like the runtime's (runtime/step_tables.h), and the bare sync.
StepCosts measureSteps(runtime::ThreadPool &pool, uint32_t tiles, uint32_t perTile, bool quick) {
  const int trials = quick ? 101 : 2001;
  const double sync = medianSeconds(trials, [&] { pool.parallelFor(pool.size(), [](size_t) {}); });
  runtime::DeviceMemory memory(tiles, 64);
  runtime::ComputeSetPlan plan;
  plan.kinds.push_back({emptyVertex, 0});
  for (uint32_t t = 0; t < tiles; ++t) {
    plan.tiles.push_back({memory.tile(t), t, t + 1});
    plan.runs.push_back({0, runtime::VertexRun::kNotRepeated, 0, perTile});
  }
  // A few chunks per thread, as planComputeSet cuts a large step.
  const uint32_t chunks = 4 * pool.size();
  for (uint32_t k = 0; k <= chunks; ++k)
    plan.chunks.push_back(uint32_t(uint64_t(tiles) * k / chunks));
  const double step = medianSeconds(trials, [&] { runtime::runComputeSet(plan, pool); });
  return {sync * 1e6, step * 1e6, step * 1e9 / (double(tiles) * perTile)};
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"popc-vertex-bench: host speed of generated vertex code against the CPU's peak, and the cost of a "
               "sync and of an empty superstep (bench/README.md)"};
  bool quick = false;
  unsigned threads = runtime::defaultThreadCount();
  app.add_flag("--quick", quick, "Short measurements (CI smoke: it runs and prints; numbers are rough)");
  app.add_option("--threads", threads, "Host threads of the sync and superstep rows (default: all cores)")
      ->check(CLI::Range(1u, 1024u));
  CLI11_PARSE(app, argc, argv);
  try {
    runtime::ThreadPool pool(threads);
    const Peak peak = measurePeak(quick);
    fmt::print("peak: {} fp32 FMA, {:.1f} GFLOP/s per core, {:.1f} on {} threads (measured)\n\n", peak.isa,
               peak.perCore, peak.perCore * pool.size(), pool.size());

    codegen::VertexCodegen cg;
    const std::vector<Case> cases = addVertices(cg);
    const uint32_t tiles = 1472;
    Bench bench(tiles);
    const auto jitStart = Clock::now();
    bench.compile(cg);
    fmt::print("vertices (JIT of {} types: {:.2f} s; cold = once per tile over {} tiles):\n\n", cases.size(),
               std::chrono::duration<double>(Clock::now() - jitStart).count(), tiles);
    fmt::print("| vertex | GFLOP/s hot | % of core peak | GFLOP/s cold | % of core peak | cold, next tile prefetched "
               "| % of core peak |\n|---|---:|---:|---:|---:|---:|---:|\n");
    auto pct = [&](double g) { return peak.perCore > 0 ? fmt::format("{:.0f}", 100 * g / peak.perCore) : "n/a"; };
    for (const Case &c : cases) {
      const auto [hot, cold, prefetched] = bench.run(cg.vertexTypes()[c.type], c.flops, quick);
      fmt::print("| {} | {:.1f} | {} | {:.1f} | {} | {:.1f} | {} |\n", c.what, hot, pct(hot), cold, pct(cold),
                 prefetched, pct(prefetched));
    }
    const uint32_t perTile = 6; // an ipu2 tile's worker contexts
    const StepCosts steps = measureSteps(pool, tiles, perTile, quick);
    fmt::print("\nsteps ({} threads, medians):\n", pool.size());
    fmt::print("  sync (parallelFor over nothing): {:.2f} us\n", steps.syncUs);
    fmt::print("  empty superstep ({} tiles x {} do-nothing vertices): {:.2f} us, {:.2f} ns per vertex call\n",
               tiles, perTile, steps.superstepUs, steps.perVertexNs);
    return 0;
  } catch (const std::exception &e) {
    fmt::print(stderr, "popc-vertex-bench: error: {}\n", e.what());
    return 1;
  }
}
