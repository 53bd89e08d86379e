// .npz archives: round trips, determinism and corrupt archives.
#include "formats/npz/npz.h"
#include "support/error.h"
#include "test_cases.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace popc;
using namespace popc::npz;
namespace fs = std::filesystem;

namespace {

fs::path tempDir() {
  fs::path dir = fs::temp_directory_path() / fmt::format("popc-npz-test-{}", getpid());
  fs::create_directories(dir);
  return dir;
}

std::vector<uint8_t> slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const fs::path &p, const std::vector<uint8_t> &bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(bytes.data()), bytes.size());
}

} // namespace

TEST_CASE("npz round-trips stored and deflated", "[npz]") {
  fs::path dir = tempDir();
  ArrayMap arrays = test::cases();
  for (bool compressed : {false, true}) {
    fs::path p = dir / (compressed ? "c.npz" : "s.npz");
    writeNpz(p, arrays, compressed);
    CHECK(readNpz(p) == arrays);
  }
  CHECK(fs::file_size(dir / "c.npz") < fs::file_size(dir / "s.npz"));
  // No temporary files are left behind.
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);
  fs::remove_all(dir);
}

TEST_CASE("npz output is byte-identical across runs and time zones", "[npz]") {
  fs::path dir = tempDir();
  ArrayMap arrays = test::cases();
  for (bool compressed : {false, true}) {
    writeNpz(dir / "a.npz", arrays, compressed);
    const char *oldTz = std::getenv("TZ");
    std::string saved = oldTz ? oldTz : "";
    setenv("TZ", "Pacific/Kiritimati", 1); // UTC+14
    tzset();
    writeNpz(dir / "b.npz", arrays, compressed);
    if (oldTz)
      setenv("TZ", saved.c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
    writeNpz(dir / "a2.npz", arrays, compressed); // overwrite an existing file too
    writeNpz(dir / "a2.npz", arrays, compressed);
    CHECK(slurp(dir / "a.npz") == slurp(dir / "b.npz"));
    CHECK(slurp(dir / "a.npz") == slurp(dir / "a2.npz"));
  }
  fs::remove_all(dir);
}

TEST_CASE("empty npz round-trips", "[npz]") {
  fs::path dir = tempDir();
  writeNpz(dir / "e.npz", {});
  CHECK(fs::file_size(dir / "e.npz") == 22);
  CHECK(readNpz(dir / "e.npz").empty());
  fs::remove_all(dir);
}

TEST_CASE("npz file errors are one-line popc::Errors", "[npz]") {
  fs::path dir = tempDir();
  auto expectError = [](const fs::path &p, const std::string &needle) {
    try {
      readNpz(p);
      FAIL("expected popc::Error for " << p);
    } catch (const Error &e) {
      std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find('\n') == std::string::npos);
      CHECK(msg.find(p.string()) != std::string::npos);
      CHECK_THAT(msg, Catch::Contains(needle));
    }
  };
  expectError(dir / "missing.npz", "file not found");
  expectError(dir, "not a regular file");
  spit(dir / "empty.npz", {});
  expectError(dir / "empty.npz", "empty file");
  spit(dir / "text.npz", std::vector<uint8_t>(100, 'x'));
  expectError(dir / "text.npz", "not a valid .npz");
  CHECK_THROWS_AS(writeNpz(dir / "no/such/dir/x.npz", test::cases()), Error);
  fs::remove_all(dir);
}

TEST_CASE("npz survives every single-byte corruption", "[npz]") {
  fs::path dir = tempDir();
  ArrayMap small;
  small["a"] = test::values(DType::F32, {3});
  small["b"] = test::values(DType::I64, {2});
  for (bool compressed : {false, true}) {
    writeNpz(dir / "ok.npz", small, compressed);
    std::vector<uint8_t> good = slurp(dir / "ok.npz");
    for (size_t i = 0; i < good.size(); ++i) {
      for (uint8_t flip : {0x01, 0x80, 0xff}) {
        std::vector<uint8_t> bad = good;
        bad[i] ^= flip;
        spit(dir / "bad.npz", bad);
        try {
          readNpz(dir / "bad.npz"); // some flips are harmless (e.g. timestamps)
        } catch (const Error &) {
        }
      }
    }
    for (size_t n = 0; n < good.size(); ++n) {
      spit(dir / "cut.npz", std::vector<uint8_t>(good.begin(), good.begin() + n));
      CHECK_THROWS_AS(readNpz(dir / "cut.npz"), Error);
    }
  }
  fs::remove_all(dir);
}

TEST_CASE("readNpzBytes reads archives from memory like readNpz", "[npz]") {
  fs::path dir = tempDir();
  ArrayMap arrays = test::cases();
  for (bool compressed : {false, true}) {
    writeNpz(dir / "m.npz", arrays, compressed);
    std::vector<uint8_t> bytes = slurp(dir / "m.npz");
    CHECK(readNpzBytes(bytes, "mem.npz") == arrays);
  }
  writeNpz(dir / "e.npz", {});
  CHECK(readNpzBytes(slurp(dir / "e.npz"), "e.npz").empty());
  auto expectError = [](const std::vector<uint8_t> &bytes, const std::string &needle) {
    try {
      readNpzBytes(bytes, "mem.npz");
      FAIL("expected popc::Error");
    } catch (const Error &e) {
      std::string msg = e.what();
      INFO(msg);
      CHECK(msg.rfind("mem.npz: ", 0) == 0);
      CHECK(msg.find('\n') == std::string::npos);
      CHECK_THAT(msg, Catch::Contains(needle));
    }
  };
  expectError({}, "empty file");
  expectError(std::vector<uint8_t>(100, 'x'), "not a valid .npz");
  // Every truncation of a valid archive is rejected, never crashes.
  writeNpz(dir / "s.npz", {{"a", test::values(DType::F32, {3})}}, true);
  std::vector<uint8_t> good = slurp(dir / "s.npz");
  for (size_t n = 0; n < good.size(); ++n)
    CHECK_THROWS_AS(readNpzBytes({good.data(), n}, "cut.npz"), Error);
  fs::remove_all(dir);
}
