#include "formats/popef/popef.h"
#include "test/unit/popef/sample_executable.h"
#include "support/error.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <cstring>
#include <fstream>
#include <functional>
#include <unistd.h>

using popc::Error;
using popc::popef::Executable;
using popc::popef::len;
namespace fb = ::popef::fb;

namespace {

std::vector<uint8_t> dummyCode() { return {'B', 'C', 0xC0, 0xDE, 1, 2, 3, 4}; }

std::vector<uint8_t> sampleBytes() { return popc::popef::serialize(popc::test::makeSampleExecutable(dummyCode())); }

std::string tempPath(const std::string &name) {
  return (std::filesystem::temp_directory_path() / (name + "." + std::to_string(::getpid()))).string();
}

// Applies `edit` to a fresh sample without tile_bytes_used (so ranges are
// bounded by bytes_per_tile alone), serializes it and expects the reader to
// reject it with a message containing `expected`.
void expectRejected(const std::function<void(fb::ExecutableT &)> &edit, const std::string &expected) {
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  exe.tile_bytes_used.clear();
  edit(exe);
  auto bytes = popc::popef::serialize(exe);
  try {
    Executable::fromBytes(bytes, "x.popef");
    FAIL("accepted an invalid executable, expected: " << expected);
  } catch (const Error &e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(expected) != std::string::npos);
    CHECK(std::string(e.what()).rfind("x.popef: ", 0) == 0);
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

} // namespace

TEST_CASE("popef round trip is exact and deterministic", "[popef]") {
  auto bytes = sampleBytes();
  CHECK(bytes == sampleBytes());
  auto exe = Executable::fromBytes(bytes, "mem");
  const auto &r = exe->root();
  CHECK(r.format_version() == popc::popef::kFormatVersion);
  CHECK(r.target()->tiles_per_ipu() == 2);
  CHECK(r.tensors()->size() == 4);
  CHECK(popc::popef::tensorBytes(*r.tensors()->Get(0)) == 16);
  CHECK(popc::popef::tensorShape(*r.tensors()->Get(3)) == popc::Shape{4});
  CHECK(r.metadata()->outputs()->Get(0)->name()->str() == "out");
  // Constants are 64-byte aligned inside the buffer.
  auto off = r.constants()->Get(0)->data()->data() - exe->bytes().data();
  CHECK(off % 64 == 0);

  // Unpack + pack gives the same bytes.
  std::unique_ptr<fb::ExecutableT> unpacked(r.UnPack());
  CHECK(popc::popef::serialize(*unpacked) == bytes);

  // Through a file.
  std::string path = tempPath("roundtrip.popef");
  popc::popef::writeFile(path, bytes);
  auto fromFile = Executable::open(path);
  CHECK(std::vector<uint8_t>(fromFile->bytes().begin(), fromFile->bytes().end()) == bytes);
  CHECK(fromFile->label() == path);
  std::remove(path.c_str());
}

TEST_CASE("popef open rejects missing, tiny and foreign files", "[popef]") {
  CHECK_THROWS_WITH(Executable::open("/nonexistent/x.popef"), Catch::Contains("/nonexistent/x.popef: cannot open"));
  std::string path = tempPath("tiny.popef");
  popc::popef::writeFile(path, std::vector<uint8_t>{1, 2, 3});
  CHECK_THROWS_WITH(Executable::open(path), path + ": not a popef file");
  std::vector<uint8_t> foreign(100, 0);
  popc::popef::writeFile(path, foreign);
  CHECK_THROWS_WITH(Executable::open(path), path + ": not a popef file");
  std::remove(path.c_str());
  CHECK_THROWS_AS(Executable::fromBytes({}, "e"), Error);
}

TEST_CASE("popef truncated files are rejected", "[popef]") {
  auto bytes = sampleBytes();
  // The builder ends the buffer with up to 7 bytes of zero alignment padding;
  // cutting only those loses nothing, so such files may still be accepted.
  size_t padding = 0;
  while (padding < 7 && bytes[bytes.size() - 1 - padding] == 0)
    ++padding;
  for (size_t n = 0; n + padding < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + n);
    INFO("kept " << n << " of " << bytes.size() << " bytes");
    CHECK_THROWS_AS(Executable::fromBytes(cut, "cut"), Error);
  }
}

TEST_CASE("popef bit flips never crash the reader", "[popef]") {
  auto bytes = sampleBytes();
  size_t rejected = 0, accepted = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    for (uint8_t mask : {0x01, 0x10, 0x80, 0xff}) {
      auto b = bytes;
      b[i] ^= mask;
      popc::popef::seal(b); // get past the file checksum to exercise the structural checks
      try {
        auto exe = Executable::fromBytes(std::move(b), "flip");
        // Whatever was accepted must be usable: touch everything the runtime touches.
        for (auto *t : *exe->root().tensors())
          (void)popc::popef::tensorBytes(*t);
        ++accepted;
      } catch (const Error &) {
        ++rejected;
      }
    }
  }
  CHECK(rejected > 0);
  CHECK(accepted > 0); // flips inside names and constant data are harmless
}

TEST_CASE("popef: copy records pack into shared pieces and expand back in order", "[popef]") {
  using popc::popef::singleCopy;
  // Tiles 1 and 2 each receive the same gather (tile 0's [0,4) then tile 3's
  // [8,12), packed); tile 2 then a strided record interleaved with another.
  const std::vector<fb::Copy> records = {
      singleCopy(0, 0, 1, 16, 4), singleCopy(3, 8, 1, 20, 4), singleCopy(0, 0, 2, 0, 4),
      singleCopy(3, 8, 2, 4, 4),  fb::Copy(0, 64, 2, 32, 4, 3, 4, 8), fb::Copy(3, 64, 2, 36, 4, 3, 4, 8)};
  fb::ExchangeStepT step;
  popc::popef::setCopies(step, records);
  CHECK(step.pieces.size() == 4); // the shared gather once, and the two strided pieces
  REQUIRE(step.placements.size() == 4);
  CHECK(step.placements[0].first_piece() == step.placements[1].first_piece());
  CHECK(step.placements[1].dst_tile() == 2);
  CHECK(step.placements[3].dst_offset() == 36); // starts inside the strided record's extent: a placement of its own
  const std::vector<fb::Copy> back = popc::test::copiesOf(step);
  REQUIRE(back.size() == records.size());
  CHECK(std::memcmp(back.data(), records.data(), records.size() * sizeof(fb::Copy)) == 0);
  // Zero-byte records move nothing and are left out.
  popc::popef::setCopies(step, {singleCopy(0, 0, 1, 0, 0)});
  CHECK(step.pieces.empty());
  CHECK(step.placements.empty());
}

TEST_CASE("popef: a mapping folds into cycles of intervals and expands back in order", "[popef]") {
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  // 'sum' (16 bytes) row by row over tiles 0 and 1, each tile's rows one block:
  // two lanes repeated once; then a tensor whose intervals do not repeat.
  fb::TensorT &sum = *exe.tensors[2];
  sum.mapping = {{0, 4, 0, 32}, {4, 4, 1, 32}, {8, 4, 0, 36}, {12, 4, 1, 36}};
  const std::vector<fb::TileInterval> rows = sum.mapping;
  popc::popef::foldMapping(sum);
  REQUIRE(sum.mapping.size() == 2);
  REQUIRE(sum.mapping_cycles.size() == 1);
  CHECK(sum.mapping_cycles[0].lanes() == 2);
  CHECK(sum.mapping_cycles[0].repeat() == 1);
  popc::popef::foldMapping(*exe.tensors[0]);
  CHECK(exe.tensors[0]->mapping.size() == 2);
  CHECK(exe.tensors[0]->mapping_cycles.empty());
  auto file = Executable::fromBytes(popc::popef::serialize(exe), "folded");
  std::vector<fb::TileInterval> back;
  popc::popef::forEachInterval(*file->root().tensors()->Get(2), [&](const fb::TileInterval &iv) { back.push_back(iv); });
  REQUIRE(back.size() == rows.size());
  CHECK(std::memcmp(back.data(), rows.data(), rows.size() * sizeof(fb::TileInterval)) == 0);
  uint64_t onTile0 = 0;
  popc::popef::forEachLane(*file->root().tensors()->Get(2), [&](const fb::TileInterval &iv, uint64_t times) {
    onTile0 += iv.tile() == 0 ? iv.bytes() * times : 0;
  });
  CHECK(onTile0 == 8);
}

TEST_CASE("popef: mapping cycles are checked without expanding them", "[popef]") {
  auto folded = [](fb::ExecutableT &e, fb::IntervalCycle cycle) {
    e.tensors[2]->mapping = {{0, 4, 0, 32}, {4, 4, 1, 32}};
    e.tensors[2]->mapping_cycles = {cycle};
  };
  expectRejected([&](auto &e) { folded(e, fb::IntervalCycle(0, 2, 2)); },
                 "tensors[2] 'sum': mapping covers more than the tensor's 16 bytes");
  expectRejected([&](auto &e) { folded(e, fb::IntervalCycle(0, 3, 1)); },
                 "tensors[2] 'sum'.mapping_cycles[0]: lanes [0, 3) out of range (2 intervals)");
  expectRejected([&](auto &e) { folded(e, fb::IntervalCycle(5, 1, 1)); }, "mapping_cycles[0]: first 5 out of range");
  expectRejected([&](auto &e) { folded(e, fb::IntervalCycle(0, 2, 0xFFFFFFFFu)); },
                 "'sum'.mapping[0]: interval range [32, 17179869216) exceeds tile memory");
  expectRejected(
      [&](auto &e) {
        folded(e, fb::IntervalCycle(1, 1, 2));
        e.tensors[2]->mapping_cycles.insert(e.tensors[2]->mapping_cycles.begin(), fb::IntervalCycle(0, 2, 0));
      },
      "mapping_cycles[1]: first 1 is inside the previous cycle");
  expectRejected(
      [&](auto &e) {
        e.tensors[2]->mapping = {{0, 0, 0, 32}, {0, 8, 1, 32}, {8, 8, 0, 40}};
        e.tensors[2]->mapping_cycles = {fb::IntervalCycle(0, 1, 1)};
      },
      "'sum'.mapping[0]: has no bytes but repeats in a cycle");
}

TEST_CASE("popef: repeated vertices are checked at their last repetition", "[popef]") {
  auto repeated = [](fb::ExecutableT &e, fb::VertexRepeat r, std::vector<uint32_t> strides) {
    e.compute_sets[0]->vertex_repeats = {r};
    e.compute_sets[0]->field_strides = std::move(strides);
  };
  // Vertex 0 (tile 0, fields at 0, 16, 32, 8 bytes each) three more times, 8 bytes on each time.
  auto ok = popc::test::makeSampleExecutable(dummyCode());
  ok.tile_bytes_used.clear(); // the repetitions reach past the sample's planned 48 bytes
  repeated(ok, fb::VertexRepeat(0, 3, 0), {0, 8, 8});
  auto file = Executable::fromBytes(popc::popef::serialize(ok), "repeated");
  CHECK(popc::popef::vertexCount(*file->root().compute_sets()->Get(0)) == 5);
  expectRejected([&](auto &e) { repeated(e, fb::VertexRepeat(0, 124, 0), {0, 8, 8}); },
                 "compute_sets[0].vertex_repeats[0]: field 2 of the last repetition range [1024, 1032) exceeds");
  expectRejected([&](auto &e) { repeated(e, fb::VertexRepeat(0, 1, 1), {0, 8, 8}); },
                 "strides [1, 4) exceed field_strides size 3");
  expectRejected([&](auto &e) { repeated(e, fb::VertexRepeat(2, 1, 0), {0, 8, 8}); },
                 "vertex 2 out of range or out of order");
  expectRejected([&](auto &e) { repeated(e, fb::VertexRepeat(0, 1024, 0), {0, 0, 0}); },
                 "repeat 1024 exceeds the limit");
}

TEST_CASE("popef: interleaved strided records whose copies do not overlap are accepted", "[popef]") {
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  exe.tile_bytes_used.clear(); // bounded by bytes_per_tile alone
  // Tile 2 receives rows [0,8) [16,24) [32,40) [48,56) from tile 0 and the gaps
  // [8,16) [24,32) [40,48) [56,64) from tile 1: extents meet, copies do not.
  popc::popef::setCopies(*exe.exchanges[0], {fb::Copy(0, 32, 2, 0, 8, 3, 0, 16), fb::Copy(1, 32, 2, 8, 8, 3, 8, 16)});
  auto bytes = popc::popef::serialize(exe);
  CHECK_NOTHROW(Executable::fromBytes(std::move(bytes), "interleaved"));
}

TEST_CASE("popef semantic checks give precise messages", "[popef]") {
  using K = fb::ProgramKind;
  expectRejected([](auto &e) { e.format_version = 99; }, "recompile the model with this popc");
  expectRejected([](auto &e) { e.target.reset(); }, "target: missing");
  expectRejected([](auto &e) { e.target->tiles_per_ipu = 0; }, "target: tiles_per_ipu must be nonzero");
  expectRejected([](auto &e) { e.target->tiles_per_ipu = 1u << 20; }, "exceeds the limit");
  expectRejected([](auto &e) { e.target->bytes_per_tile = 17u << 20; }, "bytes_per_tile 17825792 exceeds");
  expectRejected([](auto &e) { e.compute_sets[0]->field_offsets[5] = 1020; },
                 "compute_sets[0].vertices[1]: field 2 range [1020, 1028) exceeds tile memory (bytes_per_tile 1024)");
  expectRejected([](auto &e) { e.compute_sets[0]->vertices[1] = fb::Vertex(7, 1, 3); },
                 "compute_sets[0].vertices[1]: vertex type 7 out of range (1 vertex types)");
  expectRejected([](auto &e) { e.compute_sets[0]->vertices[0] = fb::Vertex(0, 4, 0); },
                 "compute_sets[0].vertices[0]: tile 4 out of range (target has 4 tiles)");
  expectRejected([](auto &e) { e.compute_sets[0]->vertices[1] = fb::Vertex(0, 1, 4); },
                 "fields [4, 7) exceed field_offsets size 6");
  expectRejected([](auto &e) { e.vertex_types[0]->module_ = 1; }, "module 1 out of range");
  expectRejected([](auto &e) { e.vertex_types[0]->symbol.clear(); }, "empty symbol");
  expectRejected([](auto &e) { e.tensors[0]->shape = {5}; }, "mapping covers 16 bytes but the tensor has 20 bytes");
  expectRejected([](auto &e) { e.tensors[0]->shape = {-1}; }, "shape dimension 0 is negative");
  expectRejected([](auto &e) { e.tensors[0]->shape = {1ll << 40, 1ll << 40}; }, "tensor size overflows");
  expectRejected([](auto &e) { e.tensors[0]->mapping[1] = fb::TileInterval(9, 7, 1, 0); }, "begins at tensor byte 9, expected 8");
  expectRejected([](auto &e) { e.tensors[0]->mapping[1] = fb::TileInterval(8, 8, 1, 1020); },
                 "tensors[0] 'a'.mapping[1]: interval range [1020, 1028) exceeds tile memory");
  expectRejected([](auto &e) { e.tensors[0]->mapping[1] = fb::TileInterval(8, 8, 9, 0); }, "tile 9 out of range");
  expectRejected([](auto &e) { e.tensors[1]->constant = 3; }, "constant index 3 out of range");
  expectRejected([](auto &e) { e.tensors[1]->constant = -1; }, "role Constant but no constant data");
  expectRejected([](auto &e) { e.constants[0]->data.resize(12); }, "constant 0 holds 12 bytes but the tensor has 16 bytes");
  expectRejected([](auto &e) { e.code[0]->bitcode.clear(); }, "code[0]: empty bitcode");
  expectRejected([](auto &e) { popc::test::setCopy(*e.exchanges[0], 0, popc::popef::singleCopy(0, 1020, 2, 0, 8)); },
                 "exchanges[0].pieces[0]: source range [1020, 1028) exceeds tile memory");
  expectRejected([](auto &e) { popc::test::setCopy(*e.exchanges[0], 0, popc::popef::singleCopy(0, 0, 7, 0, 8)); },
                 "dst_tile 7 out of range");
  expectRejected([](auto &e) { popc::test::setCopy(*e.exchanges[0], 1, popc::popef::singleCopy(1, 32, 2, 4, 8)); },
                 "exchanges[0].placements[1]: destination overlaps placements[0] on tile 2");
  expectRejected([](auto &e) { popc::test::setCopy(*e.exchanges[0], 1, popc::popef::singleCopy(2, 4, 3, 0, 8)); },
                 "exchanges[0].pieces[1]: source overlaps the destination of placements[0]");
  // Strided records: their whole extent is checked, and their own copies may not overlap.
  expectRejected([](auto &e) { popc::test::setCopy(*e.exchanges[0], 0, fb::Copy(0, 0, 2, 0, 8, 128, 0, 8)); },
                 "exchanges[0].pieces[0]: extent range [0, 1032) exceeds");
  expectRejected([](auto &e) { popc::test::setCopy(*e.exchanges[0], 0, fb::Copy(0, 0, 2, 0, 8, 1, 0, 4)); },
                 "dst_stride 4 is less than bytes 8: its 2 copies would overlap");
  expectRejected([](auto &e) { popc::test::setCopy(*e.exchanges[0], 0, fb::Copy(0, 1000, 2, 0, 8, 3, 8, 8)); },
                 "source range [1000, 1032) exceeds");
  expectRejected([](auto &e) { popc::test::setCopy(*e.exchanges[0], 0, fb::Copy(0, 0, 2, 0, 4, 0xFFFFFFFFu, 0xFFFFFFFFu, 4)); },
                 "source range [0, 18446744065119617029) exceeds");
  expectRejected(
      [](auto &e) {
        popc::test::setCopy(*e.exchanges[0], 0, fb::Copy(0, 32, 2, 0, 8, 3, 0, 16)); // tile 2: [0,8) [16,24) [32,40) [48,56)
        popc::test::setCopy(*e.exchanges[0], 1, fb::Copy(1, 32, 2, 8, 8, 3, 0, 12)); // [8,16) [20,28): meets [16,24)
      },
      "destination overlaps placements[");
  expectRejected(
      [](auto &e) {
        popc::test::setCopy(*e.exchanges[0], 0, fb::Copy(0, 32, 2, 0, 8, 3, 0, 16));
        popc::test::setCopy(*e.exchanges[0], 1, fb::Copy(2, 20, 3, 0, 4, 1, 100, 4)); // reads [20,24) of tile 2, written above
      },
      "exchanges[0].pieces[1]: source overlaps the destination of placements[0] in the same step");
  expectRejected([](auto &e) { e.streams[0]->tensor = 4; }, "streams[0] 'a': tensor 4 out of range");
  expectRejected([](auto &e) { e.main->children[1]->index = 1; }, "main.children[1]: Execute index 1 out of range (1 compute sets)");
  expectRejected([](auto &e) { e.main->children[3]->index = 2; }, "Exchange index 2 out of range");
  expectRejected([](auto &e) { e.main->children[0]->index = 2; }, "StreamCopy index 2 out of range");
  expectRejected([](auto &e) { e.main->children.push_back(popc::test::sampleProgram(K::Call, 0)); }, "Call index 0 out of range (0 functions)");
  expectRejected([](auto &e) { e.main->children[2]->children.push_back(popc::test::sampleProgram(K::Sync)); },
                 "Sync must not have children");
  expectRejected([](auto &e) { e.main.reset(); }, "main: missing");
  expectRejected([](auto &e) {
    auto r = popc::test::sampleProgram(K::Repeat);
    r->count = 2000000000u;
    e.main->children.push_back(std::move(r));
  }, "Repeat count 2000000000 exceeds");
  expectRejected([](auto &e) {
    // functions[0] calls functions[1] calls functions[0].
    e.functions.push_back(popc::test::sampleProgram(K::Sequence));
    e.functions[0]->children.push_back(popc::test::sampleProgram(K::Call, 1));
    e.functions.push_back(popc::test::sampleProgram(K::Call, 0));
    e.main->children.push_back(popc::test::sampleProgram(K::Call, 0));
  }, "recursion through Call");
  expectRejected([](auto &e) {
    fb::ProgramT *p = e.main.get();
    for (int i = 0; i < 70; ++i) {
      p->children.push_back(popc::test::sampleProgram(K::Sequence));
      p = p->children.back().get();
    }
  }, "program tree deeper than 64");
  expectRejected([](auto &e) { e.metadata->inputs[0]->dtype = fb::DType::F16; }, "metadata.inputs[0] 'a': dtype float16 differs");
  expectRejected([](auto &e) { e.metadata->inputs[0]->shape = {2, 2}; }, "shape differs");
  expectRejected([](auto &e) { e.metadata->inputs[0]->stream = 1; }, "stream 1 carries tensor 3, not tensor 0");
  expectRejected([](auto &e) { e.metadata->outputs[0]->stream = 5; }, "stream 5 out of range");
  expectRejected([](auto &e) { e.metadata->outputs[0]->tensor = 9; }, "tensor 9 out of range");
  expectRejected([](auto &e) {
    e.metadata->outputs[0]->tensor = 0;
    e.metadata->outputs[0]->stream = 0;
  }, "direction HostToDevice, expected DeviceToHost");
  expectRejected([](auto &e) { e.tile_bytes_used = {1, 2}; }, "expected 0 or one per tile (4)");
  expectRejected([](auto &e) { e.tile_bytes_used = {48, 48, 8, 5000}; }, "tile_bytes_used[3]: 5000 exceeds");
  // With tile_bytes_used, every range stays within its tile's entry: the
  // runner gives each tile just that much host memory.
  expectRejected(
      [](auto &e) {
        e.tile_bytes_used = {48, 48, 8, 8};
        popc::popef::setCopies(*e.exchanges[0], {popc::popef::singleCopy(0, 0, 2, 4, 8)});
      },
      "exchanges[0].placements[0]: destination range [4, 12) on tile 2 exceeds the tile's planned memory "
      "(tile_bytes_used[2] = 8)");
  expectRejected([](auto &e) { e.tile_bytes_used = {48, 16, 8, 8}; },
                 "range [16, 24) on tile 1 exceeds the tile's planned memory (tile_bytes_used[1] = 16)");
}

TEST_CASE("popef control programs on device values (graph API kinds) are checked", "[popef]") {
  using K = fb::ProgramKind;
  auto control = [](K kind, uint32_t tensor, size_t children) {
    auto p = popc::test::sampleProgram(kind);
    p->tensor = tensor;
    for (size_t i = 0; i < children; ++i)
      p->children.push_back(popc::test::sampleProgram(K::Sequence));
    return p;
  };
  // Well-formed: accepted.
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  exe.main->children.push_back(control(K::If, 0, 2));
  exe.main->children.push_back(control(K::RepeatWhileTrue, 0, 2));
  auto sw = control(K::Switch, 0, 3);
  sw->case_values = {1, 5};
  exe.main->children.push_back(std::move(sw));
  exe.main->children.push_back(control(K::PrintTensor, 1, 0));
  CHECK_NOTHROW(Executable::fromBytes(popc::popef::serialize(exe), "ok.popef"));

  expectRejected([&](auto &e) { e.main->children.push_back(control(K::If, 0, 1)); },
                 "If needs 2 children, has 1");
  expectRejected([&](auto &e) { e.main->children.push_back(control(K::RepeatWhileTrue, 9, 2)); },
                 "RepeatWhileTrue tensor 9 out of range");
  expectRejected([&](auto &e) {
    auto p = control(K::Switch, 0, 2);
    p->case_values = {1, 2};
    e.main->children.push_back(std::move(p));
  }, "Switch needs 3 children, has 2");
  expectRejected([&](auto &e) { e.main->children.push_back(control(K::PrintTensor, 7, 0)); },
                 "PrintTensor tensor 7 out of range");
  expectRejected([&](auto &e) { e.main->children.push_back(control(K::PrintTensor, 0, 1)); },
                 "PrintTensor must not have children");
}

TEST_CASE("popef call graph without cycles is accepted", "[popef]") {
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  using K = fb::ProgramKind;
  exe.functions.push_back(popc::test::sampleProgram(K::Sequence));
  exe.functions[0]->children.push_back(popc::test::sampleProgram(K::Call, 1));
  exe.functions.push_back(popc::test::sampleProgram(K::Sync));
  exe.main->children.push_back(popc::test::sampleProgram(K::Call, 0));
  exe.main->children.push_back(popc::test::sampleProgram(K::Call, 1));
  CHECK_NOTHROW(Executable::fromBytes(popc::popef::serialize(exe)));
}

namespace {

// A minimal executable (1 tile, one tensor) whose `field` vector ("mapping" or
// "shape" of tensors[0]) is 4-byte but not 8-byte aligned. The flatbuffers
// Verifier accepts that; the semantic checks must reject it before any element
// is read (found by fuzz/fuzz_popef: reading them was undefined behaviour).
std::vector<uint8_t> misalignedExecutable(const std::string &field) {
  for (int pad : {0, 4}) {
    flatbuffers::FlatBufferBuilder b;
    if (pad)
      b.PushElement<uint32_t>(0);
    fb::TileInterval iv(0, 16, 0, 0);
    int64_t dim = 4;
    const uint8_t *raw = field == "mapping" ? reinterpret_cast<const uint8_t *>(&iv)
                                            : reinterpret_cast<const uint8_t *>(&dim);
    size_t size = field == "mapping" ? sizeof iv : sizeof dim;
    b.StartVector(size / 4, 4); // only 4-byte alignment, unlike CreateVector
    b.PushBytes(raw, size);
    bool misaligned = b.GetSize() % 8 == 4; // the buffer's end is 8-aligned
    flatbuffers::uoffset_t vec = b.EndVector(1);
    if (!misaligned)
      continue;
    auto shape = field == "shape" ? flatbuffers::Offset<flatbuffers::Vector<int64_t>>(vec)
                                  : b.CreateVector<int64_t>({4});
    auto mapping = field == "mapping"
                       ? flatbuffers::Offset<flatbuffers::Vector<const fb::TileInterval *>>(vec)
                       : b.CreateVectorOfStructs<fb::TileInterval>({iv});
    auto tensor = fb::CreateTensor(b, b.CreateString("a"), fb::DType::F32, shape,
                                   fb::TensorRole::Input, mapping);
    auto tensors = b.CreateVector(std::vector{tensor});
    fb::TargetT t;
    t.arch = "ipu2";
    t.num_ipus = t.tiles_per_ipu = 1;
    t.bytes_per_tile = 1024;
    t.workers_per_tile = 6;
    t.clock_hz = 1330000000;
    t.exchange_bytes_per_cycle = t.inter_ipu_bytes_per_cycle = t.host_bytes_per_cycle = 4;
    auto target = fb::Target::Pack(b, &t);
    fb::ExecutableBuilder eb(b);
    eb.add_format_version(popc::popef::kFormatVersion);
    eb.add_target(target);
    eb.add_tensors(tensors);
    fb::FinishExecutableBuffer(b, eb.Finish());
    return {b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize()};
  }
  FAIL("could not build a misaligned vector");
  return {};
}

} // namespace

TEST_CASE("popef rejects 8-byte vectors the flatbuffers Verifier lets through misaligned", "[popef]") {
  for (std::string field : {"mapping", "shape"}) {
    INFO(field);
    std::vector<uint8_t> bytes = misalignedExecutable(field);
    // Precondition: the Verifier passes it and the vector really is misaligned.
    flatbuffers::Verifier verifier(bytes.data(), bytes.size());
    REQUIRE(fb::VerifyExecutableBuffer(verifier));
    const fb::Tensor *t = fb::GetExecutable(bytes.data())->tensors()->Get(0);
    const void *data = field == "mapping" ? static_cast<const void *>(t->mapping()->Data())
                                          : static_cast<const void *>(t->shape()->Data());
    REQUIRE(reinterpret_cast<uintptr_t>(data) % 8 == 4);
    popc::popef::seal(bytes);
    try {
      Executable::fromBytes(bytes, "x.popef");
      FAIL("accepted a misaligned " << field);
    } catch (const Error &e) {
      INFO(e.what());
      CHECK_THAT(e.what(), Catch::Contains("tensors[0] 'a': " + field + " is misaligned"));
    }
  }
}

TEST_CASE("a changed byte of bitcode or constant data fails its checksum before use", "[popef]") {
  const std::vector<uint8_t> good = sampleBytes();
  const auto exe = Executable::fromBytes(good, "good.popef");
  const uint8_t *base = exe->bytes().data();
  const auto *code = exe->root().code()->Get(0)->bitcode();
  REQUIRE(exe->root().constants() != nullptr);
  REQUIRE(exe->root().constants()->size() > 0);
  const auto *constant = exe->root().constants()->Get(0)->data();
  const size_t codeAt = size_t(code->data() - base) + code->size() / 2;
  const size_t constantAt = size_t(constant->data() - base);

  std::vector<uint8_t> bad = good;
  bad[codeAt] ^= 0x40;
  CHECK_THROWS_WITH(Executable::fromBytes(bad, "x.popef"), Catch::Contains("checksum mismatch: the file is truncated"));
  popc::popef::seal(bad); // a re-sealed file still fails the blob's own checksum
  CHECK_THROWS_WITH(Executable::fromBytes(bad, "x.popef"), Catch::Contains("code[0]: bitcode checksum mismatch"));
  bad = good;
  bad[constantAt] ^= 0x01;
  popc::popef::seal(bad);
  CHECK_THROWS_WITH(Executable::fromBytes(bad, "x.popef"), Catch::Contains("constants[0]: data checksum mismatch"));
}

TEST_CASE("a large file's checksum, computed beside the other checks, is still the error reported", "[popef]") {
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  auto big = std::make_unique<fb::ConstantDataT>(); // past the size hashed on a thread of its own
  big->data.assign(20u << 20, 0x5a);
  exe.constants.push_back(std::move(big));
  const std::vector<uint8_t> good = popc::popef::serialize(exe);
  const std::string path = tempPath("big.popef");
  auto write = [&](const std::vector<uint8_t> &bytes) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bytes.data()), std::streamsize(bytes.size()));
  };
  write(good);
  CHECK(Executable::open(path, 2)->root().constants()->size() == 2);
  std::vector<uint8_t> bad = good;
  bad[bad.size() / 2] ^= 0x10; // inside the big constant: its own checksum fails too
  write(bad);
  CHECK_THROWS_WITH(Executable::open(path, 2), Catch::Contains("checksum mismatch: the file is truncated"));
  bad = good;
  bad[0] ^= 0x7f; // the root offset: the flatbuffer verifier fails too
  write(bad);
  CHECK_THROWS_WITH(Executable::open(path, 2), Catch::Contains("checksum mismatch: the file is truncated"));
  std::filesystem::remove(path);
}

TEST_CASE("any changed byte or truncation fails the file checksum", "[popef]") {
  const std::vector<uint8_t> good = sampleBytes();
  for (size_t i = 0; i < good.size(); i += 7) {
    std::vector<uint8_t> bad = good;
    bad[i] ^= 0x10;
    CHECK_THROWS_AS(Executable::fromBytes(bad, "x.popef"), Error);
  }
  std::vector<uint8_t> cut(good.begin(), good.end() - 1);
  CHECK_THROWS_WITH(Executable::fromBytes(cut, "x.popef"), Catch::Contains("x.popef:"));
}

TEST_CASE("popef step fields are checked: replicas bound the arena, host shapes hold whole tensors", "[popef]") {
  expectRejected([](auto &e) { e.target->replication_factor = 0; }, "replication_factor 0 x 4 tiles per replica");
  expectRejected([](auto &e) { e.target->replication_factor = 1u << 19; }, "must be between 1 and");
  expectRejected([](auto &e) { e.metadata->inputs[0]->host_shape = {3, 5}; },
                 "host_shape holds 15 elements, not a whole number of 4-element tensors");
  expectRejected([](auto &e) { e.metadata->inputs[0]->host_shape = {0, 4}; }, "not a whole number");
  expectRejected([](auto &e) { e.metadata->inputs[0]->host_shape = {-2, 4}; }, "host_shape dimension 0 is -2");
  expectRejected([](auto &e) { e.metadata->outputs[0]->host_shape = {1ll << 30, 4}; }, "host_shape dimension 0");
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  exe.target->replication_factor = 2;
  exe.metadata->inputs[0]->host_shape = {3, 2, 4};
  exe.metadata->outputs[0]->host_shape = {2, 4};
  CHECK_NOTHROW(Executable::fromBytes(popc::popef::serialize(exe), "ok"));
}

using popc::test::segmentSampleBytes;

TEST_CASE("popef: constants in the data segment read back, 64-byte aligned after the flatbuffer", "[popef]") {
  std::vector<std::vector<uint8_t>> kept;
  const auto bytes = segmentSampleBytes(kept);
  std::vector<std::vector<uint8_t>> again;
  CHECK(bytes == segmentSampleBytes(again)); // deterministic
  auto exe = Executable::fromBytes(bytes, "segment.popef");
  REQUIRE(len(exe->root().constants()) == kept.size());
  for (uint32_t i = 0; i < kept.size(); ++i) {
    const fb::ConstantData *c = exe->root().constants()->Get(i);
    CHECK(c->data() == nullptr);
    CHECK(c->offset() % 64 == 0);
    CHECK(c->size() == kept[i].size());
    const auto got = exe->constant(i);
    CHECK(std::vector<uint8_t>(got.begin(), got.end()) == kept[i]);
  }
}

TEST_CASE("popef: released pages of a mapped file read back the same bytes", "[popef]") {
  std::vector<std::vector<uint8_t>> kept;
  const auto bytes = segmentSampleBytes(kept);
  const std::string path = tempPath("release.popef");
  popc::popef::writeFile(path, bytes);
  auto exe = Executable::open(path);
  auto constants = [&] {
    std::vector<std::vector<uint8_t>> got;
    for (uint32_t i = 0; i < kept.size(); ++i)
      got.emplace_back(exe->constant(i).begin(), exe->constant(i).end());
    return got;
  };
  REQUIRE(constants() == kept);
  // A range that starts and ends mid-page, one constant, the whole file.
  exe->releaseMappedPages(exe->bytes().subspan(100, exe->bytes().size() - 200));
  CHECK(constants() == kept);
  exe->releaseMappedPages(exe->constant(0));
  CHECK(constants() == kept);
  exe->releaseMappedPages();
  CHECK(constants() == kept);
  CHECK(std::vector<uint8_t>(exe->bytes().begin(), exe->bytes().end()) == bytes);
  std::filesystem::remove(path);
}

TEST_CASE("popef: a schedule outgrowing its size hint gives the same bytes as one that fits", "[popef]") {
  // The builder (in its own mapping, copied into the file and released page
  // by page) starts at 64 KiB and grows several times for a 1 MB schedule; a
  // big enough hint never grows.
  std::vector<std::vector<uint8_t>> kept, again;
  const auto grown = segmentSampleBytes(kept, 0, 1 << 20);
  CHECK(grown == segmentSampleBytes(again, 4u << 20, 1 << 20));
  auto exe = Executable::fromBytes(grown, "grown.popef");
  CHECK(exe->root().tensors()->Get(0)->name()->size() == 1u << 20);
  for (uint32_t i = 0; i < kept.size(); ++i) {
    const auto got = exe->constant(i);
    CHECK(std::vector<uint8_t>(got.begin(), got.end()) == kept[i]);
  }
}

TEST_CASE("popef: a data segment range outside the file, beside inline data or with changed bytes is refused",
          "[popef]") {
  std::vector<std::vector<uint8_t>> kept;
  const auto good = segmentSampleBytes(kept);
  const fb::ConstantData *c0 = fb::GetExecutable(good.data())->constants()->Get(0);
  auto patched = [&](auto mutate) {
    auto b = good;
    mutate(fb::GetMutableExecutable(b.data())->mutable_constants()->GetMutableObject(0));
    popc::popef::seal(b);
    return b;
  };
  CHECK_THROWS_WITH(Executable::fromBytes(patched([&](fb::ConstantData *c) { c->mutate_offset(good.size()); }), "x"),
                    Catch::Contains("constants[0]: data segment bytes") && Catch::Contains("inside the file"));
  CHECK_THROWS_WITH(Executable::fromBytes(patched([&](fb::ConstantData *c) { c->mutate_offset(c0->offset() + 8); }),
                                          "x"),
                    Catch::Contains("64-byte aligned"));
  CHECK_THROWS_WITH(
      Executable::fromBytes(patched([&](fb::ConstantData *c) { c->mutate_size(uint64_t(1) << 62); }), "x"),
      Catch::Contains("constants[0]: data segment bytes"));
  auto flipped = good;
  flipped[c0->offset()] ^= 1;
  popc::popef::seal(flipped);
  CHECK_THROWS_WITH(Executable::fromBytes(flipped, "x"), Catch::Contains("constants[0]: data checksum mismatch"));

  // Both inline data and a segment range: built by hand (the writer never does it).
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  std::vector<std::span<const uint8_t>> none;
  auto bytes = popc::popef::serialize(exe, 0, none);
  auto *c = fb::GetMutableExecutable(bytes.data())->mutable_constants()->GetMutableObject(0);
  c->mutate_size(c->data()->size());
  popc::popef::seal(bytes);
  CHECK_THROWS_WITH(Executable::fromBytes(bytes, "x"), Catch::Contains("has both inline data"));
}

TEST_CASE("popef: a schedule that would reach 2 GiB is refused when written, not when read", "[popef]") {
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  CHECK_THROWS_WITH(popc::popef::serialize(exe, size_t(popc::popef::kMaxScheduleBytes) + 1),
                    Catch::Contains("over popef's 2 GiB limit"));
}

TEST_CASE("popef: exchange steps checked on several threads report the first failing step", "[popef]") {
  // Enough pieces (8 steps of 10000) for the verifier to split the steps over threads.
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  exe.tile_bytes_used.clear(); // bounded by bytes_per_tile alone
  for (int s = 0; s < 8; ++s) {
    auto ex = std::make_unique<fb::ExchangeStepT>();
    ex->name = "filler" + std::to_string(s);
    ex->pieces.assign(10000, fb::Piece(0, 0, 1, 0, 0, 0)); // all checked, one placed
    ex->placements = {fb::Placement(2, 64, 0, 1)};
    exe.exchanges.push_back(std::move(ex));
  }
  const auto good = popc::popef::serialize(exe);
  const std::string path = tempPath("threads.popef");
  {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(good.data()), good.size());
  }
  CHECK_NOTHROW(Executable::open(path, 4));
  exe.exchanges[7]->pieces[9000] = fb::Piece(77, 0, 1, 0, 0, 0);
  exe.exchanges[3]->pieces[5000] = fb::Piece(99, 0, 1, 0, 0, 0);
  const auto bad = popc::popef::serialize(exe);
  {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char *>(bad.data()), bad.size());
  }
  for (unsigned threads : {1u, 2u, 4u})
    CHECK_THROWS_WITH(Executable::open(path, threads), Catch::Contains("exchanges[3].pieces[5000]") &&
                                                           Catch::Contains("99"));
  std::remove(path.c_str());
}

TEST_CASE("popef: an immediate field is a number, not memory: never range-checked, declared with 0 bytes", "[popef]") {
  // A fourth field, an immediate: its field_offsets entry is far outside the
  // 1024-byte tiles and still accepted; the memory fields stay checked.
  auto addImmediate = [](fb::ExecutableT &e, uint32_t bytes) { popc::test::addImmediateField(e, bytes, 4000000000u); };
  auto exe = popc::test::makeSampleExecutable(dummyCode());
  addImmediate(exe, 0);
  const std::vector<uint8_t> bytes = popc::popef::serialize(exe);
  const auto opened = Executable::fromBytes(bytes, "x.popef");
  CHECK(opened->root().compute_sets()->Get(0)->field_offsets()->Get(3) == 4000000000u);
  expectRejected([&](auto &e) { addImmediate(e, 4); },
                 "vertex_types[0] 'Add_2_f32': field 3 is an immediate (a number, not memory) but declares 4 bytes");
  expectRejected(
      [&](auto &e) {
        addImmediate(e, 0);
        e.format_version = 5;
      },
      "field 3 is an immediate, which format_version 5 does not have (6 added them)");
  expectRejected(
      [&](auto &e) {
        addImmediate(e, 0);
        e.compute_sets[0]->field_offsets[6] = 1020;
      },
      "compute_sets[0].vertices[1]: field 2 range [1020, 1028) exceeds tile memory");
}
