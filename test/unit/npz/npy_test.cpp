// .npy encode/decode: round trips and hostile headers.
#include "formats/npz/npz.h"
#include "support/error.h"
#include "test_cases.h"

#include <catch2/catch.hpp>

using namespace popc;
using namespace popc::npz;

namespace {

std::vector<uint8_t> npyWithHeader(const std::string &dict, size_t dataBytes, uint8_t major = 1) {
  std::string h = "\x93NUMPY";
  h += static_cast<char>(major);
  h += '\0';
  std::string text = dict + "\n";
  h += static_cast<char>(text.size() & 0xff);
  h += static_cast<char>(text.size() >> 8);
  if (major != 1)
    h += std::string(2, '\0');
  h += text;
  std::vector<uint8_t> out(h.begin(), h.end());
  out.resize(out.size() + dataBytes, 0);
  return out;
}

// Returns the message; fails the test if `bytes` parses.
std::string npyError(const std::vector<uint8_t> &bytes) {
  try {
    readNpy(bytes, "t.npy");
  } catch (const Error &e) {
    std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.rfind("t.npy", 0) == 0);
    return msg;
  }
  FAIL("expected popc::Error");
  return {};
}

} // namespace

TEST_CASE("npy round-trips every dtype and shape kind", "[npz]") {
  for (const auto &[name, array] : test::cases()) {
    INFO(name);
    std::vector<uint8_t> bytes = writeNpy(array);
    CHECK(bytes.size() % 64 == array.data.size() % 64); // header padded to 64 bytes
    Array back = readNpy(bytes, name);
    CHECK(back == array);
  }
}

TEST_CASE("makeArray copies or zero-fills", "[npz]") {
  int32_t v[] = {1, 2, 3, 4, 5, 6};
  Array a = makeArray(DType::I32, {2, 3}, v);
  REQUIRE(a.data.size() == 24);
  CHECK(std::memcmp(a.data.data(), v, 24) == 0);
  Array z = makeArray(DType::F16, {3}, nullptr);
  CHECK(z.data == std::vector<uint8_t>(6, 0));
  CHECK_THROWS_AS(makeArray(DType::F32, {-1}, nullptr), Error);
}

TEST_CASE("npy accepts numpy header variants", "[npz]") {
  // '=' byte order, double quotes, Python 2 long suffix, version 2.0, no trailing comma.
  Array a = readNpy(npyWithHeader("{\"descr\": \"=f4\", \"fortran_order\": False, \"shape\": (2L, 3L)}", 24), "t");
  CHECK(a.dtype == DType::F32);
  CHECK(a.shape == Shape{2, 3});
  Array b = readNpy(npyWithHeader("{'shape': (5,), 'fortran_order': False, 'descr': '|b1'}", 5, 2), "t");
  CHECK(b.dtype == DType::Bool);
  // Fortran order is harmless for 1-d arrays.
  Array c = readNpy(npyWithHeader("{'descr': '<i8', 'fortran_order': True, 'shape': (1, 4), }", 32), "t");
  CHECK(c.shape == Shape{1, 4});
}

TEST_CASE("npy rejects corrupt and unsupported headers with one-line errors", "[npz]") {
  auto valid = writeNpy(test::values(DType::F32, {2, 3}));
  SECTION("every truncation") {
    for (size_t n = 0; n < valid.size(); ++n)
      npyError(std::vector<uint8_t>(valid.begin(), valid.begin() + n));
  }
  SECTION("bad magic") {
    auto b = valid;
    b[1] = 'X';
    CHECK_THAT(npyError(b), Catch::Contains("bad magic"));
  }
  SECTION("bad version") {
    auto b = valid;
    b[6] = 4;
    CHECK_THAT(npyError(b), Catch::Contains("version 4.0"));
  }
  SECTION("header length beyond the file") {
    auto b = valid;
    b[8] = 0xff;
    b[9] = 0xff;
    CHECK_THAT(npyError(b), Catch::Contains("header length"));
  }
  SECTION("fortran order") {
    CHECK_THAT(npyError(npyWithHeader("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24)),
               Catch::Contains("np.ascontiguousarray"));
  }
  SECTION("object dtype") {
    CHECK_THAT(npyError(npyWithHeader("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }", 24)),
               Catch::Contains("object arrays"));
  }
  SECTION("big endian") {
    CHECK_THAT(npyError(npyWithHeader("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }", 8)),
               Catch::Contains("big-endian") && Catch::Contains("astype('<f4')"));
  }
  SECTION("unsupported dtypes") {
    for (const char *d : {"<u16", "<c8", "<U3", "|S4", "<M8[s]", "<f16", "", "f4"})
      CHECK_THAT(npyError(npyWithHeader(fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': (2,), }}", d), 8)),
                 Catch::Contains("unsupported dtype"));
  }
  SECTION("structured dtype") {
    CHECK_THAT(npyError(npyWithHeader("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8)),
               Catch::Contains("structured"));
  }
  SECTION("shape and data length disagree") {
    const char *h = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    CHECK_THAT(npyError(npyWithHeader(h, 20)), Catch::Contains("needs 24 data bytes but the file has 20"));
    CHECK_THAT(npyError(npyWithHeader(h, 28)), Catch::Contains("needs 24 data bytes but the file has 28"));
  }
  SECTION("huge or negative shapes never allocate") {
    npyError(npyWithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (4000000000, 4000000000, 4000000000), }", 8));
    npyError(npyWithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999999,), }", 8));
    npyError(npyWithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", 8));
    npyError(npyWithHeader("{'descr': '<f8', 'fortran_order': False, 'shape': (-1,), }", 8));
  }
  SECTION("malformed dicts") {
    for (const char *h : {"", "{", "}", "{'descr': '<f4'}", "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                          "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}",
                          "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}",
                          "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} junk",
                          "{'descr': '<f4, 'fortran_order': False, 'shape': (2,)}",
                          "{'descr': '<f4', 'fortran_order': False, 'shape': (2,,)}",
                          "{'descr': '<f4', 'fortran_order': False, 'shape': [2]}"})
      npyError(npyWithHeader(h, 8));
  }
  SECTION("bool bytes other than 0/1") {
    auto b = npyWithHeader("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", 2);
    b.back() = 7;
    CHECK_THAT(npyError(b), Catch::Contains("bool element 1"));
  }
}
