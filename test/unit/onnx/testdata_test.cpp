// Imports models of the ONNX backend test suite (libonnx-testdata) and checks
// our shapes against the outputs the model itself declares.
#include "compiler/onnx/importer.h"
#include "onnx_test_util.h"

#include <cstdio>

using namespace popc;
using namespace popc::onnx::test;

namespace {
const char *kNodeDir = "/usr/share/libonnx-testdata/data/node";

::onnx::ModelProto load(const std::string &path) {
  ::onnx::ModelProto m;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(m.ParseFromIstream(&in));
  return m;
}
} // namespace

TEST_CASE("ONNX backend test models of supported ops import with correct shapes", "[onnx]") {
  if (!fs::exists(kNodeDir))
    return; // libonnx-testdata not installed
  const char *models[] = {
      "test_conv_with_strides_padding", "test_conv_with_strides_no_padding",
      "test_conv_with_autopad_same", "test_conv_with_strides_and_asymmetric_padding",
      "test_basic_conv_with_padding", "test_gemm_all_attributes", "test_gemm_default_no_bias",
      "test_gemm_broadcast", "test_gemm_transposeA", "test_matmul_2d", "test_matmul_3d",
      "test_matmul_4d", "test_add_bcast", "test_sub_bcast", "test_mul_bcast", "test_div_bcast",
      "test_relu", "test_sigmoid", "test_tanh", "test_softmax_axis_1", "test_softmax_default_axis",
      "test_softmax_negative_axis", "test_maxpool_2d_pads", "test_maxpool_2d_ceil",
      "test_maxpool_2d_same_upper", "test_maxpool_2d_dilations", "test_averagepool_2d_pads",
      "test_averagepool_2d_ceil", "test_averagepool_2d_same_lower",
      "test_averagepool_2d_pads_count_include_pad", "test_globalaveragepool",
      "test_batchnorm_example", "test_flatten_axis0", "test_flatten_negative_axis1",
      "test_transpose_default", "test_transpose_all_permutations_3", "test_concat_2d_axis_0",
      "test_concat_3d_axis_negative_1",
      "test_dropout_default",
      "test_dropout_default_mask", "test_constant", "test_identity",
  };
  for (const char *name : models) {
    const std::string path = std::string(kNodeDir) + "/" + name + "/model.onnx";
    if (!fs::exists(path))
      continue;
    INFO(name);
    ir::Ir ir;
    try {
      ir = popc::onnx::importOnnx(path, {});
    } catch (const Error &e) {
      FAIL_CHECK(e.what());
      continue;
    }
    const auto model = load(path);
    for (const auto &out : model.graph().output()) {
      Shape expected;
      for (const auto &d : out.type().tensor_type().shape().dim())
        expected.push_back(d.dim_value());
      CHECK(ir.main.tensor(out.name()).info.shape == expected);
    }
  }
}

TEST_CASE("ONNX backend test models with unsupported features fail cleanly", "[onnx]") {
  if (!fs::exists(kNodeDir))
    return; // libonnx-testdata not installed
  // Whatever the model, import either succeeds or throws popc::Error naming the file.
  for (const auto &entry : fs::directory_iterator(kNodeDir)) {
    const std::string path = (entry.path() / "model.onnx").string();
    if (!fs::exists(path))
      continue;
    INFO(path);
    try {
      popc::onnx::importOnnx(path, {});
    } catch (const Error &e) {
      CHECK(std::string(e.what()).rfind(path + ": ", 0) == 0);
      if (std::getenv("POPC_ONNX_SWEEP_VERBOSE"))
        std::fprintf(stderr, "SWEEP %s\n", e.what());
    }
  }
}
