#include "compiler/driver/compile.h"

#include "compiler/codegen/kernels.h"
#include "compiler/driver/graph_profile.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/graph/serialize.h"
#include "compiler/ir/ir.h"
#include "compiler/ir/printer.h"
#include "compiler/lib/lowering.h"
#include "compiler/onnx/importer.h"
#include "compiler/passes/pass_manager.h"
#include "support/error.h"
#include "support/log.h"

#include "formats/npz/npz.h"

#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>

namespace popc::driver {

namespace {

using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

graph::Target makeTarget(const CompileOptions &o) {
  graph::Target t = graph::Target::forArch(o.arch, o.numIpus);
  if (o.tilesPerIpu) {
    if (*o.tilesPerIpu == 0 || *o.tilesPerIpu > t.tilesPerIpu)
      fail("--tiles-per-ipu {}: must be between 1 and {} for {}", *o.tilesPerIpu, t.tilesPerIpu, o.arch);
    t.tilesPerIpu = *o.tilesPerIpu;
  }
  if (o.bytesPerTile) {
    if (*o.bytesPerTile < 64 || *o.bytesPerTile > 16u * 1024 * 1024)
      fail("--bytes-per-tile {}: must be between 64 and 16777216", *o.bytesPerTile);
    t.bytesPerTile = *o.bytesPerTile;
  }
  return t;
}

// One error naming every op type the device cannot run yet, with its nodes.
void checkLowerable(const ir::Graph &g, const std::string &modelPath) {
  std::map<std::string, std::vector<std::string>> missing;
  for (const auto &op : g.ops())
    if (!lib::findLowering(op->type))
      missing[op->type].push_back(op->name);
  if (missing.empty())
    return;
  std::string list;
  for (const auto &[type, nodes] : missing) {
    list += (list.empty() ? "" : "; ") + type + " (nodes: ";
    for (size_t i = 0; i < nodes.size(); ++i)
      list += (i ? ", " : "") + nodes[i];
    list += ")";
  }
  fail("{}: unsupported operators: {}", modelPath, list);
}

} // namespace

std::map<std::string, FrozenInput> loadFrozenInputs(const std::vector<std::string> &specs) {
  std::map<std::string, FrozenInput> result;
  for (const std::string &spec : specs) {
    const size_t eq = spec.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      fail("--freeze-input '{}': expected NAME=FILE.npy or NAME=FILE.npz", spec);
    const std::string name = spec.substr(0, eq), path = spec.substr(eq + 1);
    npz::Array array;
    if (std::filesystem::path(path).extension() == ".npz") {
      const npz::ArrayMap arrays = npz::readNpz(path);
      if (auto it = arrays.find(name); it != arrays.end())
        array = it->second;
      else if (arrays.size() == 1)
        array = arrays.begin()->second;
      else
        fail("--freeze-input {}: {} has no member '{}' (and more than one member)", name, path, name);
    } else {
      std::ifstream in(path, std::ios::binary);
      if (!in)
        fail("--freeze-input {}: cannot open {}", name, path);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      array = npz::readNpy(bytes, path);
    }
    if (!result.emplace(name, FrozenInput{array.dtype, array.shape, std::move(array.data)}).second)
      fail("--freeze-input {}: given twice", name);
  }
  return result;
}

std::map<std::string, std::string> CompileOptions::describe() const {
  // Every field, by name: adding a member to CompileOptions breaks this line
  // until the new option is either described below or listed as not
  // changing the executable — so the cache key cannot silently miss it.
  const auto &[arch_, numIpus_, tilesPerIpu_, bytesPerTile_, inputShapes_, frozenInputs_, dumpIrDir_, dumpDotDir_] =
      *this;
  (void)dumpIrDir_, (void)dumpDotDir_; // debug output only; the executable is the same
  (void)arch_, (void)numIpus_, (void)tilesPerIpu_, (void)bytesPerTile_, (void)inputShapes_, (void)frozenInputs_;
  const graph::Target t = makeTarget(*this);
  std::map<std::string, std::string> d{
      {"arch", arch},
      {"num-ipus", std::to_string(numIpus)},
      {"tiles-per-ipu", std::to_string(t.tilesPerIpu)},
      {"bytes-per-tile", std::to_string(t.bytesPerTile)},
  };
  for (const auto &[name, shape] : inputShapes)
    d["input-shape:" + name] = shapeToString(shape);
  for (const auto &[name, value] : frozenInputs)
    d["freeze-input:" + name] = fmt::format("{}{}:{:016x}", dtypeName(value.dtype), shapeToString(value.shape),
                                            XXH3_64bits(value.data.data(), value.data.size()));
  return d;
}

std::vector<uint8_t> compileOnnx(const std::string &modelPath, const CompileOptions &options,
                                 CompileStats *stats, const CompileHooks *hooks) {
  ProfileFacts *profile = hooks ? hooks->profile : nullptr;
  auto phase = [&](const char *name) {
    if (hooks && hooks->phase)
      hooks->phase(name);
  };
  auto log = log::get("driver");
  CompileStats local;
  CompileStats &st = stats ? *stats : local;
  const graph::Target target = makeTarget(options);

  phase("import");
  auto t0 = Clock::now();
  onnx::ImportOptions importOptions;
  importOptions.inputShapes = options.inputShapes;
  for (const auto &[name, value] : options.frozenInputs) {
    ir::Tensor t;
    t.name = name;
    t.info = {value.dtype, value.shape};
    t.data = value.data;
    importOptions.frozenInputs.emplace(name, std::move(t));
  }
  ir::Ir ir = onnx::importOnnx(modelPath, importOptions);
  st.importSeconds = secondsSince(t0);

  phase("passes");
  t0 = Clock::now();
  passes::PassOptions passOptions;
  passOptions.dumpIrDir = options.dumpIrDir;
  passOptions.dumpDotDir = options.dumpDotDir;
  // POPC_DOT_CHECKS=FWD0:FINAL or ALL (PopART's POPART_DOT_CHECKS): DOT files of
  // those checkpoints into POPC_DOT_DIR (default: the current directory);
  // --dump-dot DIR already writes every checkpoint.
  if (const char *checks = std::getenv("POPC_DOT_CHECKS"); checks && *checks && options.dumpDotDir.empty()) {
    const char *dir = std::getenv("POPC_DOT_DIR");
    passOptions.dumpDotDir = dir && *dir ? dir : ".";
    std::string list = checks;
    for (size_t begin = 0; begin <= list.size();) {
      size_t end = std::min(list.find(':', begin), list.size());
      std::string name = list.substr(begin, end - begin);
      begin = end + 1;
      const auto &known = passes::checkpointNames();
      if (name == "ALL") {
        passOptions.dotCheckpoints.clear();
        break;
      }
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        std::string names;
        for (const auto &k : known)
          names += k + " ";
        fail("POPC_DOT_CHECKS '{}': unknown checkpoint '{}' (use {}or ALL, separated by ':')", list, name, names);
      }
      passOptions.dotCheckpoints.push_back(name);
    }
  }
  // POPC_IR_DUMP=FILE (PopART's POPART_IR_DUMP): the IR at the end of the
  // passes, or as far as they got when one fails.
  const char *irDump = std::getenv("POPC_IR_DUMP");
  auto dumpIr = [&] {
    std::ofstream out(irDump, std::ios::binary | std::ios::trunc);
    if (!(out << ir::printIr(ir)) || !out.flush())
      fail("POPC_IR_DUMP {}: cannot write the IR dump: set it to a writable file name", irDump);
  };
  try {
    passes::runPasses(ir, passOptions);
  } catch (const Error &) {
    if (irDump && *irDump)
      dumpIr();
    throw;
  }
  if (irDump && *irDump)
    dumpIr();
  st.irOps = ir.main.ops().size();
  st.passesSeconds = secondsSince(t0);
  if (profile)
    profile->ir = irJson(ir.main);
  checkLowerable(ir.main, modelPath);

  phase("lowering");
  t0 = Clock::now();
  graph::DeviceGraph dg(target);
  codegen::VertexCodegen codegen;
  std::optional<graph::MemoryPlan> plan;
  try {
    lib::lowerIr(ir, dg, codegen);
    plan = graph::planMemory(dg);
  } catch (const Error &e) {
    e.rethrowWithPrefix(modelPath + ": "); // name the model in lowering errors
  }
  st.lowerSeconds = secondsSince(t0);
  if (profile)
    profile->liveness = livenessJson(dg, *plan);
  for (const auto &cs : dg.computeSets())
    st.vertices += cs.vertices.size();

  phase("codegen");
  t0 = Clock::now();
  graph::ExecutableCode code;
  code.bitcode = codegen.finish();
  code.vertexTypes = codegen.vertexTypes();
  st.vertexTypes = code.vertexTypes.size();
  st.codegenSeconds = secondsSince(t0);

  phase("write");
  t0 = Clock::now();
  graph::ExchangeStats exchange;
  std::vector<uint8_t> bytes = graph::serializeExecutable(dg, *plan, code, options.describe(), &exchange);
  st.exchangeCopies = exchange.copies;
  st.exchangeBytes = exchange.bytes;
  st.writeSeconds = secondsSince(t0);
  log->info("compiled {}: {} IR ops, {} vertex types, {} vertices, {} copies, {} bytes", modelPath,
            st.irOps, st.vertexTypes, st.vertices, st.exchangeCopies, bytes.size());
  return bytes;
}

} // namespace popc::driver
