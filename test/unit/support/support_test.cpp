#include "support/dtype.h"
#include "support/error.h"
#include "support/float16.h"
#include "support/log.h"
#include "support/version.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace popc;

TEST_CASE("dtype sizes and names round-trip", "[support]") {
  for (DType t : {DType::F32, DType::F16, DType::F64, DType::I8, DType::I16, DType::I32, DType::I64, DType::U8,
                  DType::Bool, DType::U16, DType::U32, DType::U64, DType::BF16}) {
    CHECK(dtypeFromName(dtypeName(t)) == t);
    CHECK(dtypeSize(t) >= 1);
  }
  CHECK(dtypeSize(DType::F16) == 2);
  CHECK(dtypeSize(DType::BF16) == 2);
  CHECK(dtypeName(DType::BF16) == "bfloat16");
  CHECK(isFloatingPoint(DType::BF16));
  CHECK_FALSE(isFloatingPoint(DType::U16));
  CHECK(dtypeSize(DType::I64) == 8);
  CHECK_FALSE(dtypeFromName("complex64").has_value());
  CHECK_THROWS_AS(dtypeSize(static_cast<DType>(200)), Error);
}

TEST_CASE("16-bit floats: float16 and bfloat16 bits round to nearest even and decode exactly", "[support]") {
  CHECK(halfToFloat(0x3c00) == 1.0f);
  CHECK(halfToFloat(0x0001) == std::ldexp(1.0f, -24)); // smallest subnormal
  CHECK(floatToHalf(65520.0f) == 0x7c00);               // overflows to inf after rounding
  CHECK(floatToHalf(1.0f + std::ldexp(1.0f, -11)) == 0x3c00); // tie to even
  CHECK(bfloat16ToFloat(0x3f80) == 1.0f);
  CHECK(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)) == 0x3f80);       // tie to even (down)
  CHECK(floatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)) == 0x3f82);   // tie to even (up)
  CHECK((floatToBfloat16(std::nanf("")) & 0x7fc0) == 0x7fc0);
  for (uint32_t b = 0; b < 0x10000; b += 7) // every decoded finite bfloat16 encodes back to itself
    if ((b & 0x7f80) != 0x7f80)
      CHECK(floatToBfloat16(bfloat16ToFloat(uint16_t(b))) == b);
}

TEST_CASE("shapes", "[support]") {
  CHECK(numElements({}) == 1);
  CHECK(numElements({2, 3, 4}) == 24);
  CHECK(numElements({2, 0}) == 0);
  CHECK(shapeToString({1, 3, 224, 224}) == "[1,3,224,224]");
  CHECK(shapeToString({}) == "[]");
}

TEST_CASE("fail formats one message, POPC_ASSERT is an internal error", "[support]") {
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

TEST_CASE("log: a destination file, a module-levels file and per-module levels", "[support][log]") {
  namespace log = popc::log;
  const std::string path = std::filesystem::temp_directory_path() / ("popc_log_test." + std::to_string(::getpid()));
  const std::string config = path + ".json";
  std::filesystem::remove(path);
  std::ofstream(config) << R"({"chatty": "DEBUG", "quiet": "OFF"})";
  log::setDestination(path);
  log::setLevel("WARN");
  log::setModuleLevelsFromFile(config);
  log::get("chatty")->debug("debug from chatty");
  log::get("quiet")->error("error from quiet");
  log::get("plain")->info("info from plain");
  log::get("plain")->warn("warn from plain");
  log::get("plain")->flush();
  log::get("chatty")->flush();
  log::setDestination("stderr");
  log::setModuleLevels({{"chatty", "warn"}, {"quiet", "warn"}});
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  CHECK(text.str() == "[chatty] debug: debug from chatty\n[plain] warning: warn from plain\n");
  std::ofstream(config) << R"({"chatty": "LOUD"})";
  CHECK_THROWS_WITH(log::setModuleLevelsFromFile(config),
                    Catch::StartsWith(config + ": module 'chatty': unknown log level 'loud'"));
  std::ofstream(config) << "[1, 2";
  CHECK_THROWS_WITH(log::setModuleLevelsFromFile(config), Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(log::setModuleLevelsFromFile(config + ".missing"), Catch::Contains("cannot open"));
  // Under a regular file: no directory can be created there (spdlog would create missing ones).
  CHECK_THROWS_WITH(log::setDestination(config + "/x.log"), Catch::Contains("cannot open the log file"));
  CHECK_NOTHROW(log::setLevel("CRITICAL"));
  CHECK_NOTHROW(log::setLevel("warn"));
  std::filesystem::remove(path);
  std::filesystem::remove(config);
}
