// Graph: variables, constants, mappings, host handles, compute sets and
// vertices. Everything device-level lands in the DeviceGraph right away;
// user vertices wait for compile time, when their field sizes are final.
#include "graph_impl.h"

#include "support/error.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace popc::api {

namespace detail {

GraphImpl::GraphImpl(const Target &t)
    : target(t), dg([&] {
        graph::Target g = graph::Target::forArch(t.getArch(), t.getNumIPUs());
        g.tilesPerIpu = t.getTilesPerIPU();
        return g;
      }()),
      lowering(dg, codegen) {
  lowering.setCurrentIpu(0);
  dg.modelName = "graph";
}

Tensor GraphImpl::view(graph::TensorId id) const {
  const graph::DeviceTensor &t = dg.tensor(id);
  std::vector<std::size_t> shape(t.shape.begin(), t.shape.end());
  return Tensor(id, toType(t.dtype), shape);
}

std::string GraphImpl::uniqueName(const std::string &base, const char *fallback) {
  return base.empty() ? fmt::format("{}{}", fallback, counter++) : base;
}

std::vector<int32_t> &GraphImpl::elementTiles(uint32_t var) {
  auto it = tileOfElement.find(var);
  if (it != tileOfElement.end())
    return it->second;
  const auto &dt = dg.tensor(var);
  const uint64_t es = dtypeSize(dt.dtype);
  std::vector<int32_t> v(dt.bytes / es, -1);
  for (const auto &iv : dt.mapping)
    std::fill(v.begin() + long(iv.begin / es), v.begin() + long(iv.end / es), int32_t(iv.tile));
  return tileOfElement.emplace(var, std::move(v)).first->second;
}

void GraphImpl::flushMappings() const {
  auto &self = const_cast<GraphImpl &>(*this);
  for (uint32_t var : dirtyMappings) {
    const std::vector<int32_t> &v = self.tileOfElement.at(var);
    if (std::find(v.begin(), v.end(), -1) != v.end())
      continue; // partly mapped
    const uint64_t es = dtypeSize(dg.tensor(var).dtype);
    std::vector<graph::Interval> ivs;
    for (uint64_t e = 0; e < v.size(); ++e)
      if (!ivs.empty() && ivs.back().tile == uint32_t(v[e]))
        ivs.back().end += es;
      else
        ivs.push_back({e * es, (e + 1) * es, uint32_t(v[e])});
    self.dg.setMapping(var, std::move(ivs));
  }
  self.dirtyMappings.clear();
}

void GraphImpl::checkMapped(const Tensor &t, const std::string &what) const {
  flushMappings();
  for (const Region &r : t.regions())
    if (!dg.isMapped(r.var))
      fail("{}: tensor '{}' has no tile mapping; call graph.setTileMapping(...) or mapLinearly(...) first", what,
           dg.tensor(r.var).name);
}

void GraphImpl::addCopies(const Tensor &src, const Tensor &dst, uint32_t exchange) {
  const std::size_t es = typeSize(src.elementType());
  auto &copies = dg.exchange(exchange).copies;
  size_t i = 0, j = 0;
  uint64_t si = 0, dj = 0; // elements consumed of regions i / j
  const auto &s = src.regions(), &d = dst.regions();
  while (i < s.size() && j < d.size()) {
    const uint64_t n = std::min(s[i].count - si, d[j].count - dj);
    if (!(s[i].var == d[j].var && s[i].begin + si == d[j].begin + dj))
      copies.push_back({s[i].var, (s[i].begin + si) * es, d[j].var, (d[j].begin + dj) * es, n * es});
    si += n;
    dj += n;
    if (si == s[i].count)
      ++i, si = 0;
    if (dj == d[j].count)
      ++j, dj = 0;
  }
}

graph::TensorId GraphImpl::materialise(const Tensor &t, const std::string &name, std::vector<graph::Program> &steps) {
  if (t.regions().size() == 1 && t.regions()[0].begin == 0 &&
      t.regions()[0].count * typeSize(t.elementType()) == dg.tensor(t.regions()[0].var).bytes)
    return t.regions()[0].var;
  Shape shape(t.shape().begin(), t.shape().end());
  const graph::TensorId id = dg.addTensor(uniqueName(name, "tmp"), toDType(t.elementType()), shape,
                                          graph::TensorRole::Intermediate);
  if (t.numElements() == 0)
    return id;
  // On the tile of its first element: small (predicates, printed views).
  dg.mapToTile(id, dg.locate(t.regions()[0].var, t.regions()[0].begin * typeSize(t.elementType())).first);
  const uint32_t ex = dg.addExchange(dg.tensor(id).name + "/gather");
  addCopies(t, view(id), ex);
  steps.push_back(graph::Program::exchange(ex));
  return id;
}

program::Program deviceProgram(GraphImpl &g, std::vector<graph::Program> steps) {
  auto n = std::make_shared<program::ProgramNode>();
  n->kind = program::ProgramNode::Kind::Device;
  n->index = uint32_t(g.devicePrograms.size());
  graph::Program seq = graph::Program::sequence();
  seq.children = std::move(steps);
  g.devicePrograms.push_back(std::move(seq));
  return program::Program::fromNode(std::move(n));
}

void appendTo(program::Sequence &seq, const program::Program &p) { seq.add(p); }

} // namespace detail

using detail::CodeletClass;
using detail::CodeletField;
using detail::toDType;

Graph::Graph(const Target &target) : impl_(std::make_unique<detail::GraphImpl>(target)) {}
Graph::~Graph() = default;
Graph::Graph(Graph &&) noexcept = default;
Graph &Graph::operator=(Graph &&) noexcept = default;

const Target &Graph::getTarget() const { return impl_->target; }

Tensor Graph::addVariable(Type type, const std::vector<std::size_t> &shape, const std::string &name) {
  auto &g = *impl_;
  Shape s(shape.begin(), shape.end());
  const graph::TensorId id = g.dg.addTensor(g.uniqueName(name, "var"), toDType(type), s, graph::TensorRole::Intermediate);
  g.dg.tensor(id).persistent = true;
  return g.view(id);
}

Tensor Graph::addConstantBytes(Type type, const std::vector<std::size_t> &shape, const void *data,
                               const std::string &name) {
  auto &g = *impl_;
  Shape s(shape.begin(), shape.end());
  const graph::TensorId id = g.dg.addTensor(g.uniqueName(name, "const"), toDType(type), s, graph::TensorRole::Constant);
  auto &t = g.dg.tensor(id);
  const auto *p = static_cast<const uint8_t *>(data);
  t.constData.assign(p, p + t.bytes);
  return g.view(id);
}

std::vector<uint8_t> Graph::convertDoubles(Type type, const std::vector<double> &values) {
  std::vector<uint8_t> out(values.size() * typeSize(type));
  for (size_t i = 0; i < values.size(); ++i) {
    uint8_t *p = out.data() + i * typeSize(type);
    const double v = values[i];
    auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
    switch (type) {
    case Type::FLOAT: put(float(v)); break;
    case Type::DOUBLE: put(v); break;
    case Type::HALF: fail("HALF constants and initial values are not supported by the graph API yet; use FLOAT");
    case Type::CHAR: put(int8_t(v)); break;
    case Type::SHORT: put(int16_t(v)); break;
    case Type::INT: put(int32_t(v)); break;
    case Type::LONGLONG: put(int64_t(v)); break;
    case Type::UNSIGNED_CHAR: put(uint8_t(v)); break;
    case Type::BOOL: put(uint8_t(v != 0)); break;
    case Type::UNSIGNED_SHORT: put(uint16_t(v)); break;
    case Type::UNSIGNED_INT: put(uint32_t(v)); break;
    case Type::UNSIGNED_LONGLONG: put(uint64_t(v)); break;
    }
  }
  return out;
}

void Graph::setInitialValueBytes(const Tensor &t, const std::vector<uint8_t> &bytes) {
  auto &g = *impl_;
  if (t.regions().size() != 1 || t.regions()[0].begin != 0 ||
      t.regions()[0].count * typeSize(t.elementType()) != g.dg.tensor(t.regions()[0].var).bytes)
    fail("setInitialValue: give the whole variable (not a view), shape {}", t.shapeString());
  auto &dt = g.dg.tensor(t.regions()[0].var);
  if (bytes.size() != dt.bytes)
    fail("setInitialValue '{}': {} values for {} elements", dt.name, bytes.size() / typeSize(t.elementType()),
         t.numElements());
  // Initial values travel as the executable's constant data, loaded once with the engine.
  dt.role = graph::TensorRole::Constant;
  dt.constData = bytes;
}

Tensor Graph::clone(const Tensor &t, const std::string &name) {
  impl_->flushMappings();
  Tensor c = addVariable(t.elementType(), t.shape(), name);
  bool mapped = true;
  for (const Region &r : t.regions())
    mapped &= impl_->dg.isMapped(r.var);
  if (mapped && t.numElements())
    setTileMapping(c, getTileMapping(t));
  return c;
}

void Graph::setTileMapping(const Tensor &t, unsigned tile) {
  TileMapping m(tile + 1);
  if (t.numElements())
    m[tile].push_back({0, t.numElements()});
  setTileMapping(t, m);
}

// Maps the listed elements of a view. Element tiles are kept per variable
// and become the DeviceGraph mapping (intervals) once every element has one
// (flushMappings, before anything reads the mapping).
void Graph::setTileMapping(const Tensor &t, const TileMapping &mapping) {
  auto &g = *impl_;
  const uint32_t numTiles = g.dg.target().numTiles();
  std::vector<uint64_t> starts;
  uint64_t pos = 0;
  for (const Region &r : t.regions()) {
    starts.push_back(pos);
    pos += r.count;
  }
  for (uint32_t tile = 0; tile < mapping.size(); ++tile)
    for (const Interval &iv : mapping[tile]) {
      if (tile >= numTiles)
        fail("setTileMapping: tile {} does not exist (the target has {} tiles)", tile, numTiles);
      if (iv.end > pos || iv.begin > iv.end)
        fail("setTileMapping: interval [{}, {}) out of range for {} elements", iv.begin, iv.end, pos);
      if (iv.begin == iv.end)
        continue;
      size_t r = size_t(std::upper_bound(starts.begin(), starts.end(), iv.begin) - starts.begin()) - 1;
      for (std::size_t e = iv.begin; e < iv.end;) {
        const Region &reg = t.regions()[r];
        const uint64_t off = e - starts[r], n = std::min<uint64_t>(reg.count - off, iv.end - e);
        std::vector<int32_t> &tiles = g.elementTiles(reg.var);
        std::fill(tiles.begin() + long(reg.begin + off), tiles.begin() + long(reg.begin + off + n), int32_t(tile));
        g.dirtyMappings.insert(reg.var);
        e += n;
        ++r;
      }
    }
}

TileMapping Graph::getTileMapping(const Tensor &t) const {
  const auto &g = *impl_;
  g.checkMapped(t, "getTileMapping");
  TileMapping m;
  std::size_t pos = 0;
  const std::size_t es = typeSize(t.elementType());
  for (const Region &r : t.regions())
    for (uint64_t i = 0; i < r.count; ++i, ++pos) {
      const uint32_t tile = g.dg.locate(r.var, (r.begin + i) * es).first;
      if (m.size() <= tile)
        m.resize(tile + 1);
      if (!m[tile].empty() && m[tile].back().end == pos)
        ++m[tile].back().end;
      else
        m[tile].push_back({pos, pos + 1});
    }
  return m;
}

void Graph::setTileMapping(VertexRef v, unsigned tile) {
  auto &g = *impl_;
  if (v.getId() >= g.vertices.size())
    fail("setTileMapping: vertex {} does not exist", v.getId());
  if (tile >= g.dg.target().numTiles())
    fail("setTileMapping: tile {} does not exist (the target has {} tiles)", tile, g.dg.target().numTiles());
  g.vertices[v.getId()].tile = tile;
}

void Graph::createHostWrite(const std::string &handle, const Tensor &t) { impl_->handles[handle] = {t, true}; }
void Graph::createHostRead(const std::string &handle, const Tensor &t) {
  auto it = impl_->handles.find(handle);
  if (it != impl_->handles.end() && it->second.write)
    fail("createHostRead: handle '{}' is already a write handle; use another name", handle);
  impl_->handles[handle] = {t, false};
}

static DataStream addFifo(detail::GraphImpl &g, const std::string &handle, Type type, std::size_t n, bool h2d) {
  for (const auto &s : g.streams)
    if (s.name == handle)
      fail("stream '{}' already exists", handle);
  detail::StreamRec s{handle, type, n, h2d};
  s.buffer = g.dg.addTensor(handle + "/buffer", toDType(type), {int64_t(n)},
                            h2d ? graph::TensorRole::Input : graph::TensorRole::Output);
  s.stream = g.dg.addStream(handle, s.buffer, h2d ? graph::StreamDirection::HostToDevice
                                                  : graph::StreamDirection::DeviceToHost);
  (h2d ? g.dg.inputs : g.dg.outputs).push_back({handle, toDType(type), {int64_t(n)}, s.buffer, s.stream, {}, {}});
  g.streams.push_back(s);
  return DataStream(uint32_t(g.streams.size() - 1), handle);
}

DataStream Graph::addHostToDeviceFIFO(const std::string &handle, Type type, std::size_t n) {
  return addFifo(*impl_, handle, type, n, true);
}
DataStream Graph::addDeviceToHostFIFO(const std::string &handle, Type type, std::size_t n) {
  return addFifo(*impl_, handle, type, n, false);
}

ComputeSet Graph::addComputeSet(const std::string &name) {
  auto &g = *impl_;
  return ComputeSet(g.dg.addComputeSet(g.uniqueName(name, "cs")));
}

void Graph::addCodelets(const std::string &file, const std::string &flags) { impl_->codelets.addFile(file, flags); }
void Graph::addCodeletsFromString(const std::string &source, const std::string &name) {
  impl_->codelets.addSource(source, name);
}

VertexRef Graph::addVertex(ComputeSet cs, const std::string &type) {
  auto &g = *impl_;
  if (cs.getId() >= g.dg.computeSets().size())
    fail("addVertex '{}': compute set {} does not exist", type, cs.getId());
  if (!g.codelets.find(type))
    fail("addVertex: no vertex class '{}' (load its codelet file with graph.addCodelets first){}", type,
         g.codelets.describeClasses());
  g.vertices.push_back({cs.getId(), type, -1, {}, std::nullopt});
  return VertexRef(uint32_t(g.vertices.size() - 1));
}

VertexRef Graph::addVertex(ComputeSet cs, const std::string &type,
                           std::initializer_list<std::pair<std::string, Tensor>> connections) {
  VertexRef v = addVertex(cs, type);
  for (const auto &[field, t] : connections)
    connect(v[field], t);
  return v;
}

void Graph::connect(const FieldRef &f, const Tensor &t) {
  auto &g = *impl_;
  if (f.vertex >= g.vertices.size())
    fail("connect: vertex {} does not exist", f.vertex);
  auto &v = g.vertices[f.vertex];
  const CodeletClass *c = g.codelets.find(v.type);
  const CodeletField *field = c->field(f.field);
  if (!field)
    fail("connect: vertex class '{}' has no field '{}'{}", v.type, f.field, c->describeFields());
  if (!t.valid())
    fail("connect {}.{}: the tensor is empty (default-constructed)", v.type, f.field);
  if (field->elemType != t.elementType())
    fail("connect {}.{}: the field holds {}, the tensor is {}", v.type, f.field, typeName(field->elemType),
         typeName(t.elementType()));
  if (!field->vector && t.numElements() != 1)
    fail("connect {}.{}: a scalar field needs a tensor of one element, got shape {}", v.type, f.field,
         t.shapeString());
  v.fields[f.field] = t;
}

void Graph::setPerfEstimate(VertexRef v, uint64_t cycles) {
  if (v.getId() >= impl_->vertices.size())
    fail("setPerfEstimate: vertex {} does not exist", v.getId());
  impl_->vertices[v.getId()].cycles = cycles;
}

uint64_t Graph::estimateCycles(const std::string &type, const std::vector<std::pair<std::string, uint64_t>> &bytes) {
  const CodeletClass *c = impl_->codelets.find(type);
  if (!c)
    fail("estimateCycles: no vertex class '{}'", type);
  std::vector<uint32_t> sizes(c->fields.size(), 0);
  for (const auto &[name, b] : bytes) {
    const CodeletField *f = c->field(name);
    if (!f)
      fail("estimateCycles: vertex class '{}' has no field '{}'", type, name);
    sizes[size_t(f - c->fields.data())] = uint32_t(b);
  }
  return impl_->codelets.estimate(*c, sizes);
}

Function Graph::addFunction(const program::Program &p) {
  impl_->functions.push_back(p.node());
  return Function(uint32_t(impl_->functions.size() - 1));
}

void mapLinearly(Graph &graph, const Tensor &t, unsigned minElementsPerTile, unsigned grainSize) {
  const unsigned tiles = graph.getTarget().getNumTiles();
  const std::size_t n = t.numElements();
  if (n == 0)
    return;
  const std::size_t grain = std::max(1u, grainSize);
  const std::size_t grains = (n + grain - 1) / grain;
  const std::size_t minGrains = std::max<std::size_t>(1, (minElementsPerTile + grain - 1) / grain);
  const std::size_t used = std::max<std::size_t>(1, std::min<std::size_t>(tiles, grains / minGrains));
  const std::size_t perTile = (grains + used - 1) / used;
  TileMapping m(used);
  for (std::size_t tile = 0, g0 = 0; g0 < grains; ++tile, g0 += perTile)
    m[tile].push_back({g0 * grain, std::min(n, (g0 + perTile) * grain)});
  graph.setTileMapping(t, m);
}

} // namespace popc::api
