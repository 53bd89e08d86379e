// Internal state behind popc::api::Graph: the device graph (compiler/graph),
// the vertex code generator and the lowering context (compiler/lib) that the
// popops/poplin/popnn wrappers drive, plus what only the API has: user
// codelets, vertices waiting for their field sizes, host handles and streams.
#pragma once
#include "codelets.h"
#include "popc/Graph.hpp"

#include "compiler/codegen/kernels.h"
#include "compiler/graph/device_graph.h"
#include "compiler/lib/lowering.h"
#include "support/dtype.h"

#include <map>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace popc::api::detail {

struct VertexRec {
  uint32_t computeSet = 0;
  std::string type;
  int64_t tile = -1;
  std::map<std::string, Tensor> fields;
  std::optional<uint64_t> cycles;
};

struct HostHandle {
  Tensor tensor;
  bool write = false;
};

struct StreamRec {
  std::string name;
  Type type = Type::FLOAT;
  std::size_t elements = 0;
  bool hostToDevice = true;
  graph::TensorId buffer = 0;
  uint32_t stream = 0; // DeviceGraph stream index
};

inline DType toDType(Type t) { return static_cast<DType>(t); }
inline Type toType(DType t) { return static_cast<Type>(t); }

struct GraphImpl {
  explicit GraphImpl(const Target &t);

  Target target;
  graph::DeviceGraph dg;
  codegen::VertexCodegen codegen;
  lib::Lowering lowering;
  CodeletLibrary codelets;
  std::vector<VertexRec> vertices;
  std::map<std::string, HostHandle> handles;
  std::vector<StreamRec> streams;
  std::vector<std::shared_ptr<const program::ProgramNode>> functions;
  std::vector<graph::Program> devicePrograms; // steps built by library calls (ProgramNode::Kind::Device)

  // A whole variable's tensor view.
  Tensor view(graph::TensorId id) const;
  std::string uniqueName(const std::string &base, const char *fallback);
  // The variables a view touches must all be mapped; fails naming the first that is not.
  void checkMapped(const Tensor &t, const std::string &what) const;
  // A contiguous device tensor holding t's elements: t's own variable if it is
  // a whole one, else a new tensor filled by a copy appended to `steps`.
  graph::TensorId materialise(const Tensor &t, const std::string &name, std::vector<graph::Program> &steps);
  // Copies for every element of src to dst (same element count and type).
  void addCopies(const Tensor &src, const Tensor &dst, uint32_t exchange);
  uint32_t counter = 0;
  // Tile of every element (-1: not yet) of variables mapped through the API;
  // dirty ones become DeviceGraph mappings in flushMappings (once complete).
  std::map<uint32_t, std::vector<int32_t>> tileOfElement;
  std::set<uint32_t> dirtyMappings;
  std::vector<int32_t> &elementTiles(uint32_t var);
  void flushMappings() const;
};

// Wraps `steps` as a Device program node.
program::Program deviceProgram(GraphImpl &g, std::vector<graph::Program> steps);
void appendTo(program::Sequence &seq, const program::Program &p);

} // namespace popc::api::detail
