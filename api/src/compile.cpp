// Graph → popef: resolves user vertices (field sizes → vertex types with
// wrappers), lowers the program tree (copies become exchanges, streams
// stream copies, views of predicates and printed tensors small gathers),
// plans memory and serializes. Works on the graph's DeviceGraph and restores
// it afterwards, so one Graph can be compiled again with more added.
#include "compile.h"

#include "compiler/graph/memory_plan.h"
#include "compiler/graph/serialize.h"
#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>

namespace popc::api::detail {

using Kind = program::ProgramNode::Kind;

namespace {

struct CsExchanges {
  std::optional<uint32_t> pre, post;
};

class Compiler {
public:
  explicit Compiler(GraphImpl &g) : G(g) {}

  void resolveVertices() {
    const uint32_t base = uint32_t(G.codegen.vertexTypes().size());
    std::map<std::tuple<std::string, std::vector<uint32_t>, std::optional<uint64_t>>, uint32_t> typeIndex;
    for (size_t vi = 0; vi < G.vertices.size(); ++vi) {
      const VertexRec &v = G.vertices[vi];
      const CodeletClass &cls = *G.codelets.find(v.type);
      const std::string what = fmt::format("vertex {} ({}) in compute set '{}'", vi, v.type,
                                           G.dg.computeSet(v.computeSet).name);
      if (v.tile < 0)
        fail("{} has no tile: call graph.setTileMapping(vertex, tile)", what);
      std::vector<uint32_t> sizes;
      std::vector<graph::FieldRef> refs;
      for (const CodeletField &f : cls.fields) {
        auto it = v.fields.find(f.name);
        if (it == v.fields.end())
          fail("{}: field '{}' is not connected; call graph.connect(vertex[\"{}\"], tensor)", what, f.name, f.name);
        const Tensor &t = it->second;
        G.checkMapped(t, what);
        if (t.numElements() == 0)
          fail("{}: field '{}' is connected to an empty tensor", what, f.name);
        refs.push_back(fieldOnTile(t, uint32_t(v.tile), f.access, v.computeSet, f.name));
        sizes.push_back(uint32_t(refs.back().bytes));
      }
      auto key = std::make_tuple(cls.name, sizes, v.cycles);
      auto [it, added] = typeIndex.emplace(key, uint32_t(userTypes.size()));
      if (added) {
        const uint32_t k = uint32_t(userTypes.size());
        userTypes.push_back({cls.name, sizes, fmt::format("u{}_{}", k, cls.name)});
        codegen::VertexTypeInfo info;
        info.name = fmt::format("{}_{}", cls.name, k);
        info.symbol = userTypes.back().symbol;
        info.cycles = v.cycles ? *v.cycles : G.codelets.estimate(cls, sizes);
        for (size_t i = 0; i < cls.fields.size(); ++i)
          info.fields.push_back({cls.fields[i].name, sizes[i], cls.fields[i].access});
        userInfos.push_back(std::move(info));
      }
      G.dg.computeSet(v.computeSet).vertices.push_back({base + it->second, uint32_t(v.tile), std::move(refs)});
    }
  }

  graph::Program lower(const program::ProgramNode &n) {
    switch (n.kind) {
    case Kind::Sequence: {
      graph::Program p = graph::Program::sequence(n.name);
      for (const auto &c : n.children)
        p.children.push_back(lower(*c));
      return p;
    }
    case Kind::Execute: {
      if (n.index >= G.dg.computeSets().size())
        fail("Execute: compute set {} does not exist", n.index);
      graph::Program p = graph::Program::sequence(n.name);
      const CsExchanges &ex = csEx[n.index];
      if (ex.pre)
        p.children.push_back(graph::Program::exchange(*ex.pre));
      p.children.push_back(graph::Program::execute(n.index));
      if (ex.post)
        p.children.push_back(graph::Program::exchange(*ex.post));
      return p;
    }
    case Kind::Copy: {
      G.checkMapped(n.src, "Copy");
      G.checkMapped(n.dst, "Copy");
      const uint32_t ex = G.dg.addExchange(n.name.empty() ? fmt::format("copy{}", G.dg.exchanges().size()) : n.name);
      G.addCopies(n.src, n.dst, ex);
      return graph::Program::exchange(ex);
    }
    case Kind::StreamToTensor:
    case Kind::TensorToStream: {
      const StreamRec &s = stream(n.index);
      const bool in = n.kind == Kind::StreamToTensor;
      const Tensor &t = in ? n.dst : n.src;
      if (s.hostToDevice != in)
        fail("Copy: stream '{}' is a {} stream", s.name, s.hostToDevice ? "host-to-device" : "device-to-host");
      if (t.numElements() != s.elements || t.elementType() != s.type)
        fail("Copy: stream '{}' carries {} x {}, the tensor is {} {}", s.name, s.elements, typeName(s.type),
             typeName(t.elementType()), t.shapeString());
      G.checkMapped(t, "Copy with stream '" + s.name + "'");
      const uint32_t ex = G.dg.addExchange(s.name + (in ? "/in" : "/out"));
      const Tensor buffer = G.view(s.buffer);
      G.addCopies(in ? buffer : t, in ? t : buffer, ex);
      graph::Program p = graph::Program::sequence(n.name);
      if (!in)
        p.children.push_back(graph::Program::exchange(ex));
      p.children.push_back(graph::Program::streamCopy(s.stream));
      if (in)
        p.children.push_back(graph::Program::exchange(ex));
      return p;
    }
    case Kind::Repeat: {
      graph::Program p{graph::ProgramKind::Repeat, 0, n.count, n.name, {lower(*n.children[0])}, 0, {}};
      return p;
    }
    case Kind::RepeatWhileTrue: {
      std::vector<graph::Program> gather;
      const graph::TensorId pred = scalar(n.src, "RepeatWhileTrue", gather);
      graph::Program cond = lower(*n.children[0]);
      if (!gather.empty()) { // re-read the predicate view after every cond
        graph::Program seq = graph::Program::sequence();
        seq.children.push_back(std::move(cond));
        for (auto &s : gather)
          seq.children.push_back(s);
        cond = std::move(seq);
      }
      graph::Program p{graph::ProgramKind::RepeatWhileTrue, 0, 0, n.name, {std::move(cond), lower(*n.children[1])},
                       pred, {}};
      return p;
    }
    case Kind::If:
    case Kind::Switch: {
      std::vector<graph::Program> steps;
      const graph::TensorId t = scalar(n.src, n.kind == Kind::If ? "If" : "Switch", steps);
      if (n.kind == Kind::Switch && !isInteger(n.src.elementType()))
        fail("Switch: the control tensor must have an integer type, got {}", typeName(n.src.elementType()));
      graph::Program p{n.kind == Kind::If ? graph::ProgramKind::If : graph::ProgramKind::Switch, 0, 0, n.name, {}, t,
                       n.caseValues};
      for (const auto &c : n.children)
        p.children.push_back(lower(*c));
      steps.push_back(std::move(p));
      graph::Program seq = graph::Program::sequence();
      seq.children = std::move(steps);
      return seq;
    }
    case Kind::Call: {
      if (n.index >= G.functions.size())
        fail("Call: function {} does not exist", n.index);
      // Functions are expanded in place (same behaviour; the executable has no call stack).
      return lower(*G.functions[n.index]);
    }
    case Kind::PrintTensor: {
      std::vector<graph::Program> steps;
      G.checkMapped(n.src, "PrintTensor '" + n.name + "'");
      const graph::TensorId t = G.materialise(n.src, n.name + "/print", steps);
      G.dg.tensor(t).shape = Shape(n.src.shape().begin(), n.src.shape().end());
      graph::Program p{graph::ProgramKind::PrintTensor, 0, 0, n.name, {}, t, {}};
      steps.push_back(std::move(p));
      graph::Program seq = graph::Program::sequence();
      seq.children = std::move(steps);
      return seq;
    }
    case Kind::Sync: return graph::Program::sync();
    case Kind::Device:
      if (n.index >= G.devicePrograms.size())
        fail("internal error: device program {} missing", n.index);
      return G.devicePrograms[n.index];
    }
    fail("internal error: unknown program kind");
  }

  std::vector<UserVertexType> userTypes;
  std::vector<codegen::VertexTypeInfo> userInfos;

private:
  static bool isInteger(Type t) { return t != Type::FLOAT && t != Type::HALF && t != Type::DOUBLE; }

  const StreamRec &stream(uint32_t i) {
    if (i >= G.streams.size())
      fail("Copy: stream {} does not exist", i);
    return G.streams[i];
  }

  graph::TensorId scalar(const Tensor &t, const char *what, std::vector<graph::Program> &steps) {
    G.checkMapped(t, what);
    return G.materialise(t, fmt::format("{}/predicate", what), steps);
  }

  // The field's bytes in one block on `tile`: the tensor itself when it is
  // there contiguously, else a temporary filled before / emptied after the compute set.
  graph::FieldRef fieldOnTile(const Tensor &t, uint32_t tile, codegen::FieldAccess access, uint32_t cs,
                              const std::string &field) {
    const std::size_t es = typeSize(t.elementType());
    const uint64_t bytes = t.numElements() * es;
    if (t.regions().size() == 1) {
      const Region &r = t.regions()[0];
      const auto &dt = G.dg.tensor(r.var);
      const uint64_t b0 = r.begin * es, b1 = b0 + bytes;
      auto [tile0, off0] = G.dg.locate(r.var, b0);
      bool ok = tile0 == tile;
      uint64_t expect = off0;
      auto first = std::upper_bound(dt.mapping.begin(), dt.mapping.end(), b0,
                                    [](uint64_t b, const graph::Interval &iv) { return b < iv.begin; });
      for (size_t i = size_t(first - dt.mapping.begin()) - 1; ok && i < dt.mapping.size(); ++i) {
        if (dt.mapping[i].begin >= b1)
          break;
        const auto &iv = dt.mapping[i];
        if (iv.end <= b0 || iv.begin >= b1)
          continue;
        const uint64_t from = std::max(iv.begin, b0);
        ok = iv.tile == tile && dt.blockOffsets[i] + (from - iv.begin) == expect;
        expect += std::min(iv.end, b1) - from;
      }
      if (ok)
        return {r.var, tile, off0, bytes};
    }
    // Read-only copies of the same source bytes into one tile's compute set
    // share one temporary: Poplar sends a region to a tile once, however many
    // of the tile's vertices read it.
    const bool readOnly = access == codegen::FieldAccess::Input;
    auto key = std::make_tuple(cs, tile, int(t.elementType()), t.regions());
    if (readOnly)
      if (auto it = inputCopies.find(key); it != inputCopies.end())
        return {it->second, tile, 0, bytes};
    const graph::TensorId tmp = G.dg.addTensor(fmt::format("{}/{}@{}#{}", G.dg.computeSet(cs).name, field, tile,
                                                           G.dg.tensors().size()),
                                               toDType(t.elementType()), {int64_t(t.numElements())},
                                               graph::TensorRole::Intermediate);
    G.dg.mapToTile(tmp, tile);
    CsExchanges &ex = csEx[cs];
    if (access != codegen::FieldAccess::Output) {
      if (!ex.pre)
        ex.pre = G.dg.addExchange(G.dg.computeSet(cs).name + "/in");
      G.addCopies(t, G.view(tmp), *ex.pre);
    }
    if (access != codegen::FieldAccess::Input) {
      if (!ex.post)
        ex.post = G.dg.addExchange(G.dg.computeSet(cs).name + "/out");
      G.addCopies(G.view(tmp), t, *ex.post);
    }
    if (readOnly)
      inputCopies.emplace(std::move(key), tmp);
    return {tmp, tile, 0, bytes};
  }

  GraphImpl &G;
  std::map<uint32_t, CsExchanges> csEx;
  // (compute set, tile, element type, source regions) -> the temporary holding them
  std::map<std::tuple<uint32_t, uint32_t, int, std::vector<Region>>, graph::TensorId> inputCopies;
};

// Restores the graph's DeviceGraph after a compile (success or error).
struct RestoreGraph {
  GraphImpl &g;
  graph::DeviceGraph saved;
  explicit RestoreGraph(GraphImpl &g) : g(g), saved(g.dg) {}
  ~RestoreGraph() { g.dg = saved; }
};

} // namespace

std::vector<uint8_t> compile(GraphImpl &G, const std::vector<program::Program> &programs,
                             const std::map<std::string, std::string> &options, std::vector<uint32_t> *tensorIndex) {
  G.flushMappings();
  RestoreGraph restore(G);
  // Stream buffers nobody mapped: spread linearly (the exchange moves them).
  for (const StreamRec &s : G.streams)
    if (!G.dg.isMapped(s.buffer) && G.dg.tensor(s.buffer).bytes)
      G.dg.mapLinearly(s.buffer, 0, G.dg.target().tilesPerIpu, 1, 64); // same tiles every compile
  Compiler c(G);
  c.resolveVertices();
  graph::Program main = graph::Program::sequence("main");
  for (const program::Program &p : programs)
    main.children.push_back(c.lower(*p.node()));
  G.dg.main() = std::move(main);
  for (graph::TensorId t = 0; t < G.dg.tensors().size(); ++t)
    if (!G.dg.isMapped(t) && G.dg.tensor(t).bytes)
      fail("tensor '{}' has no tile mapping: call graph.setTileMapping(tensor, tile) or mapLinearly(graph, tensor) "
           "before creating the engine", G.dg.tensor(t).name);
  const graph::MemoryPlan plan = graph::planMemory(G.dg);
  graph::ExecutableCode code;
  code.vertexTypes = G.codegen.vertexTypes();
  code.bitcode = G.codegen.finish();
  if (!c.userTypes.empty()) {
    code.bitcode = linkBitcode(code.bitcode, G.codelets.buildVertexModule(c.userTypes));
    code.vertexTypes.insert(code.vertexTypes.end(), c.userInfos.begin(), c.userInfos.end());
  }
  std::map<std::string, std::string> opts = options;
  opts["graph-api.programs"] = std::to_string(programs.size());
  return graph::serializeExecutable(G.dg, plan, code, opts, nullptr, tensorIndex);
}

} // namespace popc::api::detail
