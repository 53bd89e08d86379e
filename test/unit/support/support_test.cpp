#include "support/dtype.h"
#include "support/error.h"
#include "support/log.h"
#include "support/version.h"

#include <catch2/catch.hpp>

using namespace popc;

TEST_CASE("dtype sizes and names round-trip", "[support]") {
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8,
                  DType::Bool}) {
    CHECK(dtypeFromName(dtypeName(t)) == t);
    CHECK(dtypeSize(t) >= 1);
  }
  CHECK(dtypeSize(DType::F16) == 2);
  CHECK(dtypeSize(DType::I64) == 8);
  CHECK_FALSE(dtypeFromName("complex64").has_value());
  CHECK_THROWS_AS(dtypeSize(static_cast<DType>(200)), Error);
}

TEST_CASE("shapes", "[support]") {
  CHECK(numElements({}) == 1);
  CHECK(numElements({2, 3, 4}) == 24);
  CHECK(numElements({2, 0}) == 0);
  CHECK(shapeToString({1, 3, 224, 224}) == "[1,3,224,224]");
  CHECK(shapeToString({}) == "[]");
}

TEST_CASE("fail formats one message; POPC_ASSERT is an internal error", "[support]") {
  CHECK_THROWS_WITH(fail("{}: field {} is {}", "m.onnx", "x", 3), "m.onnx: field x is 3");
  CHECK_THROWS_AS([] { POPC_ASSERT(1 + 1 == 3); }(), InternalError);
}

TEST_CASE("log levels are validated", "[support]") {
  CHECK_NOTHROW(log::setLevel("info"));
  CHECK_NOTHROW(log::setLevel("warn"));
  CHECK_THROWS_WITH(log::setLevel("loud"), Catch::Contains("unknown log level"));
  CHECK(log::get("test") == log::get("test"));
}

TEST_CASE("the compiler version names popc", "[support]") {
  CHECK(compilerVersion().rfind("popc ", 0) == 0);
}
