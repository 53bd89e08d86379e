// Engine: compiles the graph to popef bytes and runs them with the runtime's
// Engine in this process. Host handles read and write whole variables; views
// are gathered/scattered on the host side.
#include "popc/Engine.hpp"

#include "compile.h"
#include "formats/popef/popef.h"
#include "runtime/engine.h"
#include "support/error.h"

#include <fmt/format.h>

#include <cstring>

namespace popc::api {

std::vector<uint8_t> compileGraph(Graph &graph, const std::vector<program::Program> &programs,
                                  const OptionFlags &options) {
  return detail::compile(graph.impl(), programs, options);
}

struct Engine::Impl {
  std::vector<uint8_t> bytes;
  std::unique_ptr<runtime::Engine> engine;
  std::map<std::string, detail::HostHandle> handles;
  std::vector<detail::StreamRec> streams;
  std::map<uint32_t, uint64_t> varBytes;
  std::vector<uint32_t> tensorIndex; // graph tensor -> executable tensor

  const detail::HostHandle &handle(const std::string &name, bool write) {
    auto it = handles.find(name);
    if (it == handles.end())
      fail("{}: no host handle '{}' (create it with graph.{}(\"{}\", tensor) before the engine)",
           write ? "writeTensor" : "readTensor", name, write ? "createHostWrite" : "createHostRead", name);
    return it->second;
  }

  const detail::StreamRec &stream(const std::string &name) const {
    for (const auto &r : streams)
      if (r.name == name)
        return r;
    fail("connectStream: no stream named '{}'", name);
  }

  // Host copy between a view and a flat buffer, one variable at a time.
  void transfer(const Tensor &t, uint8_t *host, bool toDevice) {
    const std::size_t es = typeSize(t.elementType());
    std::map<uint32_t, std::vector<uint8_t>> vars;
    for (const Region &r : t.regions())
      if (!vars.count(r.var)) {
        std::vector<uint8_t> &b = vars[r.var];
        b.resize(varBytes.at(r.var));
        engine->readTensor(tensorIndex.at(r.var), b.data(), b.size());
      }
    uint64_t pos = 0;
    for (const Region &r : t.regions()) {
      uint8_t *dev = vars[r.var].data() + r.begin * es;
      if (toDevice)
        std::memcpy(dev, host + pos, r.count * es);
      else
        std::memcpy(host + pos, dev, r.count * es);
      pos += r.count * es;
    }
    if (toDevice)
      for (auto &[var, b] : vars)
        engine->writeTensor(tensorIndex.at(var), b.data(), b.size());
  }
};

Engine::Engine(Graph &graph, const program::Program &program, const OptionFlags &options)
    : Engine(graph, std::vector<program::Program>{program}, options) {}

Engine::Engine(Graph &graph, const std::vector<program::Program> &programs, const OptionFlags &options)
    : impl_(std::make_unique<Impl>()) {
  auto &g = graph.impl();
  impl_->bytes = detail::compile(g, programs, options, &impl_->tensorIndex);
  impl_->handles = g.handles;
  impl_->streams = g.streams;
  for (graph::TensorId t = 0; t < g.dg.tensors().size(); ++t)
    impl_->varBytes[t] = g.dg.tensor(t).bytes;
  auto exe = popef::Executable::fromBytes(impl_->bytes, "graph");
  runtime::EngineOptions engineOptions;
  engineOptions.probeCodeInChild = false; // code this process just generated, not a file from elsewhere
  impl_->engine = std::make_unique<runtime::Engine>(std::move(exe), engineOptions);
}

Engine::~Engine() = default;

void Engine::run(unsigned program, const std::string &) { impl_->engine->runProgram(program); }

void Engine::writeTensor(const std::string &name, const void *data) {
  const auto &h = impl_->handle(name, true);
  if (!h.write)
    fail("writeTensor: '{}' is a read handle (createHostRead); create a write handle", name);
  impl_->transfer(h.tensor, static_cast<uint8_t *>(const_cast<void *>(data)), true);
}

void Engine::writeTensor(const std::string &name, const void *begin, const void *end) {
  const auto &h = impl_->handle(name, true);
  const std::size_t want = h.tensor.numElements() * typeSize(h.tensor.elementType());
  if (size_t(static_cast<const uint8_t *>(end) - static_cast<const uint8_t *>(begin)) != want)
    fail("writeTensor '{}': the buffer has {} bytes, the tensor {}", name,
         static_cast<const uint8_t *>(end) - static_cast<const uint8_t *>(begin), want);
  writeTensor(name, begin);
}

void Engine::readTensor(const std::string &name, void *data) {
  const auto &h = impl_->handle(name, false);
  impl_->transfer(h.tensor, static_cast<uint8_t *>(data), false);
}

void Engine::readTensor(const std::string &name, void *begin, void *end) {
  const auto &h = impl_->handle(name, false);
  const std::size_t want = h.tensor.numElements() * typeSize(h.tensor.elementType());
  if (size_t(static_cast<uint8_t *>(end) - static_cast<uint8_t *>(begin)) != want)
    fail("readTensor '{}': the buffer has {} bytes, the tensor {}", name,
         static_cast<uint8_t *>(end) - static_cast<uint8_t *>(begin), want);
  readTensor(name, begin);
}

void Engine::connectStream(const std::string &name, void *begin, void *end) {
  const detail::StreamRec *s = &impl_->stream(name);
  const uint64_t bytes = s->elements * typeSize(s->type);
  uint8_t *b = static_cast<uint8_t *>(begin), *e = static_cast<uint8_t *>(end);
  if (e < b || uint64_t(e - b) < bytes || (e - b) % std::max<uint64_t>(bytes, 1) != 0)
    fail("connectStream '{}': the buffer holds {} bytes, not a multiple of one transfer ({} bytes)", name, e - b,
         bytes);
  auto pos = std::make_shared<uint64_t>(0);
  const bool h2d = s->hostToDevice;
  impl_->engine->connectStream(name, [b, e, pos, h2d](void *data, uint64_t n) {
    if (h2d)
      std::memcpy(data, b + *pos, n);
    else
      std::memcpy(b + *pos, data, n);
    *pos += n;
    if (b + *pos >= e)
      *pos = 0; // circular
  });
}

void Engine::connectStream(const std::string &name, void *p) {
  const detail::StreamRec &s = impl_->stream(name);
  connectStream(name, p, static_cast<uint8_t *>(p) + s.elements * typeSize(s.type));
}

void Engine::connectStreamToCallback(const std::string &name, std::function<void(void *)> callback) {
  impl_->engine->connectStream(name, [callback](void *data, uint64_t) { callback(data); });
}

void Engine::setPrintHandler(std::function<void(const std::string &)> handler) {
  impl_->engine->setPrintHandler(std::move(handler));
}

const std::vector<uint8_t> &Engine::getExecutable() const { return impl_->bytes; }

// Written as popc-onnx writes them (the schedule zstd-compressed), so a saved
// file is as small as a compiled one; getExecutable() keeps the plain bytes.
void Engine::saveExecutable(const std::string &path) const {
  popef::writeFile(path, popef::compress(impl_->bytes, popef::kDefaultCompressionLevel));
}

uint64_t Engine::getCycles() const { return impl_->engine->report().cycles.total(); }

void Engine::resetProfile() { impl_->engine->resetReport(); }

void Engine::printProfileSummary(std::ostream &os) const {
  const runtime::Report &r = impl_->engine->report();
  const double clock = double(r.clockHz ? r.clockHz : 1);
  os << fmt::format("Target: {} ({} host threads)\n", r.arch, r.threads);
  os << fmt::format("Program runs: {}\n", r.runs);
  os << fmt::format("Total cycles: {} ({:.3f} us at {:.2f} GHz)\n", r.cycles.total(), r.cycles.total() / clock * 1e6,
                    clock / 1e9);
  os << fmt::format("  compute {}  exchange {}  sync {}  host {}\n", r.cycles.compute, r.cycles.exchange, r.cycles.sync,
                    r.cycles.host);
  os << "Compute sets:\n";
  for (const auto &c : r.computeSets)
    if (c.runs)
      os << fmt::format("  {:<40} {:>6} vertices {:>5} tiles {:>10} cycles/run x{}\n", c.name, c.vertices, c.tiles,
                        c.cyclesPerRun, c.runs);
  os << "Exchanges:\n";
  for (const auto &e : r.exchanges)
    if (e.runs)
      os << fmt::format("  {:<40} {:>10} bytes {:>10} cycles/run x{}\n", e.name, e.bytes,
                        e.syncCyclesPerRun + e.transferCyclesPerRun, e.runs);
  // Memory: planned peak bytes per tile.
  const auto &exe = impl_->engine->executable().root();
  uint64_t used = 0, peak = 0, tiles = 0;
  if (exe.tile_bytes_used())
    for (uint32_t b : *exe.tile_bytes_used()) {
      used += b;
      peak = std::max<uint64_t>(peak, b);
      tiles += b != 0;
    }
  const uint64_t total = uint64_t(exe.target()->bytes_per_tile()) * exe.target()->num_ipus() * exe.target()->tiles_per_ipu();
  os << fmt::format("Memory: {} bytes on {} tiles ({:.4f}% of {} bytes); busiest tile {} bytes\n", used, tiles,
                    100.0 * double(used) / double(total), total, peak);
}

} // namespace popc::api
