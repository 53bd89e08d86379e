// Round trips with real numpy (POPC_PYTHON) in both directions.
#include "formats/npz/npz.h"
#include "support/error.h"
#include "test_cases.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sys/wait.h>
#include <unistd.h>

using namespace popc;
using namespace popc::npz;
namespace fs = std::filesystem;

namespace {

const fs::path kScripts = POPC_NPZ_TEST_DIR;

int runPython(const std::string &script, const fs::path &arg) {
  const char *py = std::getenv("POPC_PYTHON");
  std::string cmd = fmt::format("'{}' -B '{}' '{}'", py ? py : "/usr/bin/python3",
                                (kScripts / script).string(), arg.string());
  int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// numpy-made files, generated once per test binary run and removed at exit.
struct NumpyFiles {
  fs::path dir = fs::temp_directory_path() / fmt::format("popc-npz-numpy-{}", getpid());
  NumpyFiles() { REQUIRE(runPython("make_numpy_files.py", dir) == 0); }
  ~NumpyFiles() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};
const fs::path &numpyFiles() {
  static const NumpyFiles files;
  return files.dir;
}

std::vector<uint8_t> slurp(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

} // namespace

TEST_CASE("numpy savez and savez_compressed are read exactly", "[npz][numpy]") {
  ArrayMap want = test::cases();
  for (const char *file : {"savez.npz", "savez_compressed.npz"}) {
    INFO(file);
    ArrayMap got = readNpz(numpyFiles() / file);
    REQUIRE(got.size() == want.size());
    for (const auto &[name, array] : want) {
      INFO(name);
      REQUIRE(got.count(name));
      CHECK(got.at(name) == array);
    }
  }
}

TEST_CASE("writeNpy matches numpy.save byte for byte", "[npz][numpy]") {
  for (const auto &[name, array] : test::cases()) {
    INFO(name);
    CHECK(writeNpy(array) == slurp(numpyFiles() / (name + ".npy")));
  }
}

TEST_CASE("numpy reads our npz files exactly", "[npz][numpy]") {
  fs::path dir = fs::temp_directory_path() / fmt::format("popc-npz-ours-{}", getpid());
  fs::create_directories(dir);
  for (bool compressed : {false, true}) {
    fs::path p = dir / (compressed ? "ours_compressed.npz" : "ours.npz");
    writeNpz(p, test::cases(), compressed);
    CHECK(runPython("check_npz.py", p) == 0);
  }
  fs::remove_all(dir);
}

TEST_CASE("bad numpy-made files give clear errors", "[npz][numpy]") {
  const std::pair<const char *, const char *> cases[] = {
      {"fortran.npz", "np.ascontiguousarray"},
      {"object.npz", "object arrays"},
      {"bigendian.npz", "big-endian"},
      {"complex64.npz", "unsupported dtype '<c8'"},
      {"structured.npz", "structured"},
      {"not_a_zip.npz", "not a valid .npz"},
      {"not_npy_member.npz", "member 'readme.txt'"},
      {"truncated.npz", "npz"},
      {"short_data.npz", "member 'x.npy'"},
      {"bad_crc.npz", "member 'x.npy'"},
  };
  for (auto [file, needle] : cases) {
    fs::path p = numpyFiles() / "bad" / file;
    try {
      readNpz(p);
      FAIL("expected popc::Error for " << file);
    } catch (const Error &e) {
      std::string msg = e.what();
      INFO(msg);
      CHECK(msg.find('\n') == std::string::npos);
      CHECK(msg.rfind(p.string(), 0) == 0);
      CHECK_THAT(msg, Catch::Contains(needle));
    }
  }
}
