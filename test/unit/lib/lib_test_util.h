// The lowering tests' one harness: a small IR model built with the IR tests'
// builders (test/unit/ir/ir_test_util.h), lowered for a few tiles of an ipu2
// (so planners must split), serialized, and run on the simulated IPU.
#pragma once
#include "compiler/codegen/kernels.h"
#include "compiler/graph/memory_plan.h"
#include "compiler/graph/serialize.h"
#include "compiler/ir/op_registry.h"
#include "compiler/lib/lowering.h"
#include "runtime/engine.h"
#include "test/unit/ir/ir_test_util.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace popc::lib::test {

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T> &v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!v.empty())
    std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <typename T> std::vector<T> valuesOf(const std::vector<uint8_t> &b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), b.data(), b.size());
  return v;
}

struct Lowered {
  runtime::HostTensorMap outputs;
  std::vector<std::string> computeSets; // names, in order
};

// Lowers `ir` (outputs already set) for `tiles` tiles and runs it once on `inputs`.
inline Lowered lowerAndRun(ir::Ir &ir, const runtime::HostTensorMap &inputs, uint32_t tiles,
                           uint32_t bytesPerTile = 624 * 1024) {
  ir::inferGraph(ir.main);
  graph::Target target = graph::Target::forArch("ipu2");
  target.tilesPerIpu = tiles;
  target.bytesPerTile = bytesPerTile;
  graph::DeviceGraph dg(target);
  codegen::VertexCodegen cg;
  lib::lowerIr(ir, dg, cg);
  graph::MemoryPlan plan = graph::planMemory(dg);
  Lowered result;
  for (const auto &cs : dg.computeSets())
    result.computeSets.push_back(cs.name);
  graph::ExecutableCode code;
  code.bitcode = cg.finish();
  code.vertexTypes = cg.vertexTypes();
  auto exe = popef::Executable::fromBytes(graph::serializeExecutable(dg, plan, code, {}));
  runtime::Engine engine(exe, {2, nullptr});
  result.outputs = engine.run(inputs);
  return result;
}

inline ir::Attributes attrs(std::initializer_list<std::pair<std::string, ir::AttrValue>> list) {
  ir::Attributes a;
  for (const auto &[k, v] : list)
    a.set(k, v);
  return a;
}

// A model of inputs (with their host data), constants and ops, one output per op.
struct Model {
  ir::Ir ir;
  runtime::HostTensorMap inputs;
  std::vector<std::string> lastComputeSets; // from the last run()

  explicit Model(int64_t opset = 13) { ir.main.opset = opset; }

  template <typename T> void input(const std::string &name, DType t, Shape shape, const std::vector<T> &v) {
    REQUIRE(int64_t(v.size()) == numElements(shape));
    ir::test::addInput(ir.main, name, shape, t);
    inputs[name] = runtime::HostTensor{t, shape, bytesOf(v)};
  }
  template <typename T> void constant(const std::string &name, DType t, Shape shape, const std::vector<T> &v) {
    ir::test::addConst(ir.main, name, std::move(shape), v, t);
  }
  void op(const std::string &type, std::vector<std::string> ins, const std::string &out, ir::Attributes a = {}) {
    ir::Op o = ir::test::makeOp(type, out + "_op", std::move(ins), {out});
    o.attrs = std::move(a);
    ir::test::infer(ir.main, std::move(o));
  }
  void op(const std::string &type, std::vector<std::string> ins, const std::string &out,
          std::initializer_list<std::pair<std::string, ir::AttrValue>> a) {
    op(type, std::move(ins), out, attrs(a));
  }
  const ir::TensorInfo &info(const std::string &name) { return ir.main.tensor(name).info; }

  runtime::HostTensorMap run(const std::vector<std::string> &outputs, uint32_t tiles = 3,
                             uint32_t bytesPerTile = 624 * 1024) {
    ir.main.outputs = outputs;
    Lowered l = lowerAndRun(ir, inputs, tiles, bytesPerTile);
    lastComputeSets = std::move(l.computeSets);
    return std::move(l.outputs);
  }
};

} // namespace popc::lib::test
