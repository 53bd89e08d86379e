// popc graph API: Graph, the device graph a program runs on (Poplar's
// poplar::Graph): variables and constants mapped to tiles, compute sets of
// vertices (built-in or user codelets) connected to tensor views, host
// streams and read/write handles.
#pragma once
#include "popc/Program.hpp"
#include "popc/Target.hpp"
#include "popc/Tensor.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace popc::api {

namespace detail {
struct GraphImpl;
} // namespace detail

class VertexRef;

// One field of one vertex: vtx["in"].
struct FieldRef {
  uint32_t vertex = 0;
  std::string field;
};

class VertexRef {
public:
  VertexRef() = default;
  explicit VertexRef(uint32_t id) : id_(id) {}
  uint32_t getId() const { return id_; }
  FieldRef operator[](const std::string &field) const { return {id_, field}; }

private:
  uint32_t id_ = UINT32_MAX;
};

// Element intervals [begin, end) of a tensor view on each tile.
struct Interval {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};
using TileMapping = std::vector<std::vector<Interval>>;

class Graph {
public:
  explicit Graph(const Target &target);
  explicit Graph(const Device &device) : Graph(device.getTarget()) {}
  ~Graph();
  Graph(Graph &&) noexcept;
  Graph &operator=(Graph &&) noexcept;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const Target &getTarget() const;

  // --- data -------------------------------------------------------------
  Tensor addVariable(Type type, const std::vector<std::size_t> &shape, const std::string &name = "");
  // Raw element bytes (typeSize(type) each, little-endian, row-major).
  Tensor addConstantBytes(Type type, const std::vector<std::size_t> &shape, const void *data,
                          const std::string &name = "");
  template <typename T>
  Tensor addConstant(Type type, const std::vector<std::size_t> &shape, const std::vector<T> &values,
                     const std::string &name = "") {
    return addConstantBytes(type, shape, convert(type, values).data(), name);
  }
  template <typename T>
  Tensor addConstant(Type type, const std::vector<std::size_t> &shape, std::initializer_list<T> values,
                     const std::string &name = "") {
    return addConstant(type, shape, std::vector<T>(values), name);
  }
  // Every element = value.
  template <typename T>
    requires std::is_arithmetic_v<T>
  Tensor addConstant(Type type, const std::vector<std::size_t> &shape, T value, const std::string &name = "") {
    std::size_t n = 1;
    for (auto d : shape)
      n *= d;
    return addConstant(type, shape, std::vector<T>(n, value), name);
  }
  // Value the tensor holds when the engine is created (variables of whole views).
  template <typename T> void setInitialValue(const Tensor &t, const std::vector<T> &values) {
    setInitialValueBytes(t, convert(t.elementType(), values));
  }
  template <typename T> void setInitialValue(const Tensor &t, std::initializer_list<T> values) {
    setInitialValue(t, std::vector<T>(values));
  }
  void setInitialValueBytes(const Tensor &t, const std::vector<uint8_t> &bytes);
  // A new variable with t's type, shape and tile mapping.
  Tensor clone(const Tensor &t, const std::string &name = "");

  // --- tile mapping -----------------------------------------------------
  void setTileMapping(const Tensor &t, unsigned tile);
  void setTileMapping(const Tensor &t, const TileMapping &mapping); // intervals of t's elements
  TileMapping getTileMapping(const Tensor &t) const;
  void setTileMapping(VertexRef v, unsigned tile);

  // --- host access ------------------------------------------------------
  void createHostWrite(const std::string &handle, const Tensor &t);
  void createHostRead(const std::string &handle, const Tensor &t);
  DataStream addHostToDeviceFIFO(const std::string &handle, Type type, std::size_t numElements);
  DataStream addDeviceToHostFIFO(const std::string &handle, Type type, std::size_t numElements);

  // --- compute ----------------------------------------------------------
  ComputeSet addComputeSet(const std::string &name = "");
  ComputeSet createComputeSet(const std::string &name = "") { return addComputeSet(name); }
  // Compiles the vertex classes of a C++ codelet file (clang-19), or loads a
  // file precompiled by `popc-codelet` (.gp). Errors name the file and line.
  void addCodelets(const std::string &file, const std::string &compileFlags = "");
  // Codelet source given as a string (`name` is used in diagnostics).
  void addCodeletsFromString(const std::string &source, const std::string &name = "codelets.cpp");
  VertexRef addVertex(ComputeSet cs, const std::string &vertexType);
  VertexRef addVertex(ComputeSet cs, const std::string &vertexType,
                      std::initializer_list<std::pair<std::string, Tensor>> connections);
  void connect(const FieldRef &field, const Tensor &t);
  // Overrides the codelet's getCycleEstimate (or the default) for this vertex.
  void setPerfEstimate(VertexRef v, uint64_t cycles);
  void setCycleEstimate(VertexRef v, uint64_t cycles) { setPerfEstimate(v, cycles); }
  // Cycle estimate of one execution of `vertexType` with these field sizes in
  // bytes (its getCycleEstimate, or the default) — for planning.
  uint64_t estimateCycles(const std::string &vertexType, const std::vector<std::pair<std::string, uint64_t>> &fieldBytes);

  Function addFunction(const program::Program &p);

  detail::GraphImpl &impl() { return *impl_; }
  const detail::GraphImpl &impl() const { return *impl_; }

private:
  template <typename T> static std::vector<uint8_t> convert(Type type, const std::vector<T> &values) {
    std::vector<double> d(values.begin(), values.end());
    return convertDoubles(type, d);
  }
  static std::vector<uint8_t> convertDoubles(Type type, const std::vector<double> &values);
  std::unique_ptr<detail::GraphImpl> impl_;
};

// Spreads t's elements evenly over the target's tiles in multiples of
// `grainSize`, at least `minElementsPerTile` per tile (poputil::mapTensorLinearly).
void mapLinearly(Graph &graph, const Tensor &t, unsigned minElementsPerTile = 1, unsigned grainSize = 1);

} // namespace popc::api
