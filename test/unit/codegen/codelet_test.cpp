// Codelet vertices: library functions linked, inlined and specialised into
// the vertex module; results against host references.
#include "jit_helper.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>

using namespace popc;
using namespace popc::codegen;
using namespace popc::codegen::test;

namespace {

FieldInfo field(const std::string &name, size_t bytes, FieldAccess access) {
  return {name, uint32_t(bytes), access};
}

} // namespace

TEST_CASE("TopK codelet keeps the k best of each row, ties by lower index", "[codegen][codelet]") {
  const int64_t rows = 3, cols = 7, k = 3;
  std::vector<float> in = {1, 5, 5, 2, 9, -1, 5, //
                           0, 0, 0, 0, 0, 0, 0,  //
                           -3, 4, 8, 8, 1, 2, 7};
  for (int largest : {1, 0}) {
    CodeletSpec spec;
    spec.function = "popc_topk_f32";
    spec.name = "TopK_test";
    spec.fields = {field("in", in.size() * 4, FieldAccess::Input), field("values", rows * k * 4, FieldAccess::Output),
                   field("indices", rows * k * 8, FieldAccess::Output)};
    spec.args = {rows, cols, k, largest};
    VertexCodegen cg;
    const uint32_t type = cg.getOrCreate(spec);
    JitModule jit(cg);
    auto out = jit.run(cg.vertexTypes()[type], {toBytes(in), Bytes(rows * k * 4), Bytes(rows * k * 8)});
    auto values = fromBytes<float>(out[1]);
    auto indices = fromBytes<int64_t>(out[2]);
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<int64_t> order(cols);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        return largest ? in[r * cols + a] > in[r * cols + b] : in[r * cols + a] < in[r * cols + b];
      });
      for (int64_t j = 0; j < k; ++j) {
        CHECK(indices[r * k + j] == order[j]);
        CHECK(values[r * k + j] == in[r * cols + order[j]]);
      }
    }
  }
}

TEST_CASE("ArgMax codelet on float16 rows, first and last index of ties", "[codegen][codelet]") {
  // 1.0 = 0x3c00, 2.0 = 0x4000, -2.0 = 0xc000
  std::vector<uint16_t> in = {0x3c00, 0x4000, 0x4000, 0xc000};
  for (int last : {0, 1}) {
    CodeletSpec spec;
    spec.function = "popc_argreduce_f16";
    spec.fields = {field("in", 8, FieldAccess::Input), field("out", 8, FieldAccess::Output)};
    spec.args = {1, 4, 1, last};
    VertexCodegen cg;
    const uint32_t type = cg.getOrCreate(spec);
    JitModule jit(cg);
    auto out = jit.run(cg.vertexTypes()[type], {toBytes(in), Bytes(8)});
    CHECK(fromBytes<int64_t>(out[1])[0] == (last ? 2 : 1));
  }
}

TEST_CASE("Gather codelet reads rows by run-time index, negative and out-of-range indices", "[codegen][codelet]") {
  // data [2][3][2] (outer 2, axis 3, inner 2), indices {2, -3, 7}
  std::vector<int32_t> data(12);
  std::iota(data.begin(), data.end(), 100);
  std::vector<int64_t> idx = {2, -3, 7};
  CodeletSpec spec;
  spec.function = "popc_gather_e4_i64";
  spec.fields = {field("table", 48, FieldAccess::Input), field("indices", 24, FieldAccess::Input),
                 field("out", 2 * 3 * 2 * 4, FieldAccess::Output)};
  spec.args = {2, 3, 3, 2};
  VertexCodegen cg;
  const uint32_t type = cg.getOrCreate(spec);
  JitModule jit(cg);
  auto out = fromBytes<int32_t>(jit.run(cg.vertexTypes()[type], {toBytes(data), toBytes(idx), Bytes(48)})[2]);
  CHECK(out == std::vector<int32_t>{104, 105, 100, 101, 0, 0, 110, 111, 106, 107, 0, 0});
}

TEST_CASE("codelet calls are inlined: the bitcode defines no library function", "[codegen][codelet]") {
  CodeletSpec spec;
  spec.function = "popc_onehot_e4_i64";
  spec.fields = {field("indices", 8, FieldAccess::Input), field("values", 8, FieldAccess::Input),
                 field("out", 16, FieldAccess::Output)};
  spec.args = {1, 4};
  VertexCodegen cg;
  cg.getOrCreate(spec);
  const std::string ir = hostOptimisedIR(cg.finish());
  CHECK(ir.find("define internal") == std::string::npos);
  CHECK(ir.find("call void @popc_") == std::string::npos);
}

TEST_CASE("a codelet the library lacks is a clear error", "[codegen][codelet]") {
  CodeletSpec spec;
  spec.function = "popc_no_such_codelet";
  spec.fields = {field("x", 4, FieldAccess::Input)};
  VertexCodegen cg;
  cg.getOrCreate(spec);
  CHECK_THROWS_WITH(cg.finish(), Catch::Contains("popc_no_such_codelet"));
  spec.function = "system";
  CHECK_THROWS_WITH(cg.getOrCreate(spec), Catch::Contains("not a library codelet"));
}
