#include "runtime/bitcode_gate.h"
#include "test/unit/runtime/vertex_ir.h"
#include "runtime/cycle_model.h"
#include "runtime/engine.h"
#include "runtime/step_tables.h"
#include "runtime/thread_pool.h"
#include "support/error.h"
#include "test/unit/popef/sample_executable.h"

#include <catch2/catch.hpp>

#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <cstring>
#include <filesystem>
#include <unistd.h>

using popc::Error;
using popc::runtime::Engine;
using popc::runtime::HostTensor;
using popc::runtime::HostTensorMap;
namespace fb = ::popef::fb;

namespace {

enum class Variant { Add, AddExp, CallsSystem, InlineAsm, ExternalGlobal, IndirectCall, WrongEntryType, ExternalDefGlobal };

// out[i] = in0[i] + in1[i] for 2 floats; fields at tile_base + offsets[0..2].
// Variants add one forbidden construct each (or an allowed libm call).
std::vector<uint8_t> makeBitcode(Variant variant, const std::string &symbol = "add_f32_2") {
  llvm::LLVMContext ctx;
  llvm::Module m("vertices", ctx);
  llvm::IRBuilder<> b(ctx);
  auto *ptr = b.getPtrTy();
  auto *fty = variant == Variant::WrongEntryType ? llvm::FunctionType::get(b.getInt32Ty(), {ptr, ptr}, false)
                                                 : llvm::FunctionType::get(b.getVoidTy(), {ptr, ptr}, false);
  auto *f = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, symbol, m);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", f));
  llvm::Value *base = f->getArg(0), *offsets = f->getArg(1);
  auto field = [&](unsigned i) { return popc::test::fieldPointer(b, base, offsets, i); };
  llvm::Value *in0 = field(0), *in1 = field(1), *out = field(2);
  for (unsigned i = 0; i < 2; ++i) {
    llvm::Value *x = b.CreateLoad(b.getFloatTy(), b.CreateConstGEP1_32(b.getFloatTy(), in0, i));
    llvm::Value *y = b.CreateLoad(b.getFloatTy(), b.CreateConstGEP1_32(b.getFloatTy(), in1, i));
    llvm::Value *r = b.CreateFAdd(x, y);
    if (variant == Variant::AddExp) {
      auto expf = m.getOrInsertFunction("expf", b.getFloatTy(), b.getFloatTy());
      r = b.CreateFAdd(r, b.CreateCall(expf, {llvm::ConstantFP::get(b.getFloatTy(), 0.0)})); // + 1
    }
    b.CreateStore(r, b.CreateConstGEP1_32(b.getFloatTy(), out, i));
  }
  switch (variant) {
  case Variant::CallsSystem: {
    auto system = m.getOrInsertFunction("system", b.getInt32Ty(), ptr);
    b.CreateCall(system, {llvm::ConstantPointerNull::get(ptr)});
    break;
  }
  case Variant::InlineAsm:
    b.CreateCall(llvm::InlineAsm::get(llvm::FunctionType::get(b.getVoidTy(), false), "nop", "", true), {});
    break;
  case Variant::ExternalGlobal: {
    auto *g = new llvm::GlobalVariable(m, b.getInt32Ty(), false, llvm::GlobalValue::ExternalLinkage, nullptr, "environ");
    b.CreateLoad(b.getInt32Ty(), g);
    break;
  }
  case Variant::ExternalDefGlobal:
    new llvm::GlobalVariable(m, b.getInt32Ty(), false, llvm::GlobalValue::ExternalLinkage, b.getInt32(0), "counter");
    break;
  case Variant::IndirectCall:
    b.CreateCall(llvm::FunctionType::get(b.getVoidTy(), false),
                 b.CreateIntToPtr(b.getInt64(0x1234), ptr), {});
    break;
  default: break;
  }
  if (variant == Variant::WrongEntryType)
    b.CreateRet(b.getInt32(0));
  else
    b.CreateRetVoid();
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::WriteBitcodeToFile(m, os);
  os.flush();
  return {bytes.begin(), bytes.end()};
}

std::shared_ptr<const popc::popef::Executable> build(const fb::ExecutableT &exe) {
  return popc::popef::Executable::fromBytes(popc::popef::serialize(exe), "sample.popef");
}

HostTensorMap sampleInputs() {
  HostTensor a{popc::DType::F32, {4}, std::vector<uint8_t>(16)};
  float v[4] = {1, 2, 3, 4};
  std::memcpy(a.data.data(), v, 16);
  return {{"a", a}};
}

std::vector<float> floats(const HostTensor &t) {
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

std::string gateError(Variant variant) {
  try {
    Engine engine(build(popc::test::makeSampleExecutable(makeBitcode(variant))));
  } catch (const Error &e) {
    return e.what();
  }
  return "accepted";
}

} // namespace

TEST_CASE("runtime runs the sample executable", "[runtime]") {
  for (unsigned threads : {1u, 2u, 4u}) {
    Engine engine(build(popc::test::makeSampleExecutable(makeBitcode(Variant::Add))), {threads, nullptr});
    REQUIRE(engine.inputs().size() == 1);
    CHECK(engine.describeInputs() == "a float32 [4]");
    auto out = engine.run(sampleInputs());
    REQUIRE(out.count("out"));
    CHECK(out["out"].shape == popc::Shape{4});
    CHECK(floats(out["out"]) == std::vector<float>{11, 22, 33, 44});

    // Cycle model: 1 vertex of 10 cycles per tile, x6 for round-robin issue; the exchange crosses IPUs
    // (global sync 1000 + 8 bytes / 2 per cycle); Sync 100; two stream copies
    // of 16 bytes (global sync 1000 + 16 / 8).
    const auto &r = engine.report();
    CHECK(r.cycles.compute == 60);
    CHECK(r.cycles.exchange == 4);
    CHECK(r.cycles.sync == 100 + 1000 + 2000);
    CHECK(r.cycles.host == 4);
    CHECK(r.runs == 1);
    CHECK(r.threads == threads);
    REQUIRE(r.computeSets.size() == 1);
    CHECK(r.computeSets[0].tiles == 2);
    CHECK(r.computeSets[0].runs == 1);
    CHECK(r.exchanges[0].interIpu);
    CHECK(r.exchanges[0].bytes == 16);

    engine.run(sampleInputs());
    CHECK(engine.report().cycles.total() == 2 * (60 + 4 + 3100 + 4));
    engine.resetReport();
    CHECK(engine.report().cycles.total() == 0);
  }
}

TEST_CASE("runtime parallel paths give the same results", "[runtime]") {
  // Expensive vertices and a large exchange make the engine use the pool.
  auto exe = popc::test::makeSampleExecutable(makeBitcode(Variant::Add));
  exe.target->bytes_per_tile = 1 << 20;
  exe.vertex_types[0]->cycles = 500000;
  auto big = std::make_unique<fb::ExchangeStepT>();
  big->name = "big";
  popc::popef::setCopies(*big, {popc::popef::singleCopy(0, 4096, 1, 500000, 300000), popc::popef::singleCopy(1, 4096, 0, 500000, 300000),
                 popc::popef::singleCopy(2, 4096, 3, 500000, 100)});
  exe.exchanges.push_back(std::move(big));
  exe.tile_bytes_used.clear();
  exe.main->children.insert(exe.main->children.begin() + 3, popc::test::sampleProgram(fb::ProgramKind::Exchange, 1));
  for (unsigned threads : {1u, 3u}) {
    Engine engine(build(exe), {threads, nullptr});
    for (int i = 0; i < 20; ++i)
      CHECK(floats(engine.run(sampleInputs())["out"]) == std::vector<float>{11, 22, 33, 44});
    CHECK(engine.report().exchanges[1].bytes == 600100);
    CHECK(engine.report().cycles.compute == 6 * 20 * 500000); // busiest context x 6 (round-robin)
  }
}

TEST_CASE("runtime streams an empty tensor", "[runtime]") {
  auto exe = popc::test::makeSampleExecutable(makeBitcode(Variant::Add));
  auto t = popc::test::sampleTensor("empty", fb::TensorRole::Input, {});
  t->shape = {0, 3};
  exe.tensors.push_back(std::move(t));
  auto s = std::make_unique<fb::HostStreamT>();
  s->name = "empty";
  s->tensor = 4;
  exe.streams.push_back(std::move(s));
  auto io = std::make_unique<fb::IoInfoT>();
  io->name = "empty";
  io->shape = {0, 3};
  io->tensor = 4;
  io->stream = 2;
  exe.metadata->inputs.push_back(std::move(io));
  exe.main->children.insert(exe.main->children.begin(), popc::test::sampleProgram(fb::ProgramKind::StreamCopy, 2));
  Engine engine(build(exe), {1, nullptr});
  auto in = sampleInputs();
  in["empty"] = HostTensor{popc::DType::F32, {0, 3}, {}};
  CHECK(floats(engine.run(in)["out"]) == std::vector<float>{11, 22, 33, 44});
}

TEST_CASE("runtime runs Repeat and Call and allowed libm calls", "[runtime]") {
  auto exe = popc::test::makeSampleExecutable(makeBitcode(Variant::AddExp));
  using K = fb::ProgramKind;
  auto repeat = popc::test::sampleProgram(K::Repeat);
  repeat->count = 3;
  repeat->children.push_back(popc::test::sampleProgram(K::Call, 0));
  exe.functions.push_back(popc::test::sampleProgram(K::Execute, 0));
  exe.main->children.insert(exe.main->children.begin() + 2, std::move(repeat));
  Engine engine(build(exe), {2, nullptr});
  auto out = engine.run(sampleInputs());
  CHECK(floats(out["out"]) == std::vector<float>{12, 23, 34, 45});
  CHECK(engine.report().cycles.compute == 6 * 40);
  CHECK(engine.report().computeSets[0].runs == 4);
}

TEST_CASE("runtime checks host inputs", "[runtime]") {
  Engine engine(build(popc::test::makeSampleExecutable(makeBitcode(Variant::Add))), {1, nullptr});
  auto expectMessage = [&](const HostTensorMap &in, const std::string &part) {
    try {
      engine.run(in);
      FAIL("accepted bad inputs");
    } catch (const Error &e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(part) != std::string::npos);
      CHECK(std::string(e.what()).find("Expected inputs: a float32 [4]") != std::string::npos);
    }
  };
  expectMessage({}, "missing 'a'");
  auto in = sampleInputs();
  in["b"] = in["a"];
  expectMessage(in, "unexpected input 'b'");
  in = sampleInputs();
  in["a"].dtype = popc::DType::I32;
  expectMessage(in, "'a' has dtype int32, expected float32");
  in = sampleInputs();
  in["a"].shape = {2, 2};
  expectMessage(in, "'a' has shape [2,2], expected [4]");
  in = sampleInputs();
  in["a"].data.resize(12);
  expectMessage(in, "'a' has 12 bytes of data, expected 16");
}

TEST_CASE("bitcode gate refuses unsafe vertex code", "[runtime]") {
  CHECK(gateError(Variant::CallsSystem) ==
        "sample.popef: code module 0: call to external function 'system' is not allowed");
  CHECK_THAT(gateError(Variant::InlineAsm), Catch::Contains("inline assembly"));
  CHECK_THAT(gateError(Variant::ExternalGlobal), Catch::Contains("external global 'environ'"));
  CHECK_THAT(gateError(Variant::ExternalDefGlobal), Catch::Contains("'counter' has external linkage"));
  CHECK_THAT(gateError(Variant::IndirectCall), Catch::Contains("indirect call"));
  CHECK_THAT(gateError(Variant::WrongEntryType), Catch::Contains("must have type void(ptr, ptr)"));
  try {
    Engine engine(build(popc::test::makeSampleExecutable(makeBitcode(Variant::Add), "missing_fn")));
    FAIL("accepted");
  } catch (const Error &e) {
    CHECK_THAT(e.what(), Catch::Contains("entry function 'missing_fn' is not defined"));
  }
  auto garbage = popc::test::makeSampleExecutable({'n', 'o', 't', ' ', 'b', 'c'});
  CHECK_THROWS_WITH(Engine(build(garbage)), Catch::Contains("sample.popef: code module 0: invalid bitcode"));
}

TEST_CASE("runtime rejects truncated and bit-flipped popef files", "[runtime]") {
  auto bytes = popc::popef::serialize(popc::test::makeSampleExecutable(makeBitcode(Variant::Add)));
  std::string path = (std::filesystem::temp_directory_path() / ("rt." + std::to_string(::getpid()) + ".popef")).string();
  for (size_t keep : {size_t(0), size_t(7), bytes.size() / 3, bytes.size() / 2, bytes.size() - 9}) {
    popc::popef::writeFile(path, std::span(bytes.data(), keep));
    CHECK_THROWS_AS(popc::popef::Executable::open(path), Error);
  }
  // Flips anywhere (including inside the bitcode): refused or run, never a crash.
  size_t refused = 0;
  for (size_t i = 0; i < bytes.size(); i += 7) {
    auto b = bytes;
    b[i] ^= 0x5a;
    try {
      Engine engine(popc::popef::Executable::fromBytes(b, "flip"), {1, nullptr});
      try {
        engine.run(sampleInputs());
      } catch (const Error &) {
      }
    } catch (const Error &) {
      ++refused;
    }
  }
  CHECK(refused > 0);
  std::remove(path.c_str());
}

TEST_CASE("cycle model", "[runtime]") {
  using popc::runtime::tileComputeCycles;
  // Seven vertices on six contexts: the busiest runs two (20 cycles), and
  // round-robin issue makes that 6 x 20 tile cycles.
  std::vector<uint64_t> seven(7, 10);
  CHECK(tileComputeCycles(seven, 6) == 120);
  std::vector<uint64_t> mixed = {50, 10, 10, 10, 10, 10, 10};
  CHECK(tileComputeCycles(mixed, 6) == 300);
  // One vertex alone still gets only every sixth issue slot.
  CHECK(tileComputeCycles(std::vector<uint64_t>{10}, 6) == 60);
  CHECK(tileComputeCycles({}, 6) == 0);

  auto exe = popc::test::makeSampleExecutable({1});
  fb::TargetT &t = *exe.target;
  t.tiles_per_ipu = 4;
  popc::popef::setCopies(*exe.exchanges[0], {popc::popef::singleCopy(0, 0, 1, 0, 10), popc::popef::singleCopy(0, 16, 2, 0, 6),
                              popc::popef::singleCopy(3, 0, 1, 16, 3)});
  auto bytes = popc::popef::serialize(exe);
  const auto *root = fb::GetExecutable(bytes.data());
  auto cost = popc::runtime::exchangeCost(*root->target(), *root->exchanges()->Get(0));
  // Tile 0 sends 16 bytes, tile 1 receives 13: ceil(16/4) = 4.
  CHECK(cost.transfer == 4);
  CHECK(cost.sync == 100);
  CHECK(!cost.interIpu);
  CHECK(cost.bytes == 19);
  auto s = popc::runtime::streamCopyCost(*root->target(), 17);
  CHECK(s.sync == 1000);
  CHECK(s.host == 3);
  // Control and printing: a sync per control read, a global sync per print; a host
  // all-reduce moves the bytes to the host and back behind a global sync.
  CHECK(popc::runtime::syncCycles(*root->target()) == 100);
  CHECK(popc::runtime::controlReadCycles(*root->target()) == 100);
  CHECK(popc::runtime::printTensorCycles(*root->target()) == 1000);
  auto allReduce = popc::runtime::hostAllReduceCost(*root->target(), 17);
  CHECK(allReduce.sync == 1000);
  CHECK(allReduce.transfer == 6);
  CHECK(allReduce.bytes == 17);
  CHECK(allReduce.interIpu);

  SECTION("a strided record costs exactly what its single copies cost") {
    // Tile 0 rows [0,4) [16,20) [32,36) [48,52) -> tile 1 packed; and a broadcast
    // (src_stride 0) of tile 3's [0,4) to tile 2 four times.
    std::vector<fb::Copy> singles, strided = {fb::Copy(0, 0, 1, 0, 4, 3, 16, 4), fb::Copy(3, 0, 2, 0, 4, 3, 0, 8)};
    for (int i = 0; i < 4; ++i) {
      singles.push_back(popc::popef::singleCopy(0, 16 * i, 1, 4 * i, 4));
      singles.push_back(popc::popef::singleCopy(3, 0, 2, 8 * i, 4));
    }
    auto costOf = [&](const std::vector<fb::Copy> &copies) {
      popc::popef::setCopies(*exe.exchanges[0], copies);
      auto b = popc::popef::serialize(exe);
      const auto *r = fb::GetExecutable(b.data());
      return std::pair(popc::runtime::exchangeCost(*r->target(), *r->exchanges()->Get(0)),
                       popc::runtime::exchangeTraffic(*r->target(), *r->exchanges()->Get(0)));
    };
    auto [one, oneTraffic] = costOf(singles);
    auto [two, twoTraffic] = costOf(strided);
    CHECK(one.bytes == 32);
    CHECK(two.bytes == one.bytes);
    CHECK(two.transfer == one.transfer);
    REQUIRE(twoTraffic.size() == oneTraffic.size());
    for (size_t i = 0; i < oneTraffic.size(); ++i) {
      CHECK(twoTraffic[i].sentOn == oneTraffic[i].sentOn);
      CHECK(twoTraffic[i].recvOn == oneTraffic[i].recvOn);
    }
  }

  SECTION("on one IPU the cost comes from the pieces and placements, and equals the records'") {
    // Shared pieces (a gather sent to tiles 1 and 2), a strided source with
    // gaps and one without; then a piece no placement uses, which moves nothing.
    std::vector<fb::Copy> copies = {popc::popef::singleCopy(0, 0, 1, 0, 8), fb::Copy(3, 0, 1, 8, 4, 3, 16, 4),
                                    popc::popef::singleCopy(0, 0, 2, 0, 8), fb::Copy(3, 0, 2, 8, 4, 3, 16, 4),
                                    fb::Copy(0, 32, 3, 0, 8, 1, 4, 8)};
    popc::popef::setCopies(*exe.exchanges[0], copies);
    auto costs = [&](uint32_t ipus) {
      t.num_ipus = ipus; // 2: every tile is on IPU 0 still, but the cost is counted record by record
      auto b = popc::popef::serialize(exe);
      const auto *r = fb::GetExecutable(b.data());
      return std::tuple(popc::runtime::exchangeCost(*r->target(), *r->exchanges()->Get(0)),
                        popc::runtime::exchangeVolume(*r->target(), *r->exchanges()->Get(0)),
                        popc::runtime::exchangeTraffic(*r->target(), *r->exchanges()->Get(0)));
    };
    auto check = [&] {
      auto [byRecord, volumeByRecord, trafficByRecord] = costs(2);
      auto [byPlacement, volumeByPlacement, trafficByPlacement] = costs(1);
      CHECK(byPlacement.bytes == byRecord.bytes);
      CHECK(volumeByPlacement.bytes == volumeByRecord.bytes);
      CHECK(byPlacement.transfer == byRecord.transfer);
      CHECK(!byPlacement.interIpu);
      REQUIRE(trafficByPlacement.size() == trafficByRecord.size());
      for (size_t i = 0; i < trafficByRecord.size(); ++i) {
        CHECK(trafficByPlacement[i].tile == trafficByRecord[i].tile);
        CHECK(trafficByPlacement[i].sentOn == trafficByRecord[i].sentOn);
        CHECK(trafficByPlacement[i].recvOn == trafficByRecord[i].recvOn);
      }
      return trafficByPlacement;
    };
    REQUIRE(exe.exchanges[0]->placements.size() == 3);
    REQUIRE(exe.exchanges[0]->pieces.size() == 3); // tiles 1 and 2 share their two pieces
    auto traffic = check();
    CHECK(traffic[0].sentOn == 20); // [0, 8) once for tiles 1 and 2, and [32, 44)
    CHECK(traffic[3].sentOn == 16); // four runs of 4 bytes, sent once
    exe.exchanges[0]->pieces.emplace_back(3, 100, 50, 0, 0, 0);
    auto withUnused = check();
    CHECK(withUnused[3].sentOn == 16);
    t.num_ipus = 2;
  }

  SECTION("the exchange multicasts: a source byte read by several tiles is sent once") {
    // Tile 0's bytes [0, 8) go to tiles 1, 2 and 3, and [4, 12) to tile 1 again:
    // tile 0 sends the union [0, 12), tile 1 receives 16.
    popc::popef::setCopies(*exe.exchanges[0], {popc::popef::singleCopy(0, 0, 1, 0, 8), popc::popef::singleCopy(0, 4, 1, 8, 8),
                                popc::popef::singleCopy(0, 0, 2, 0, 8), popc::popef::singleCopy(0, 0, 3, 0, 8)});
    auto multi = popc::popef::serialize(exe);
    const auto *r = fb::GetExecutable(multi.data());
    auto traffic = popc::runtime::exchangeTraffic(*r->target(), *r->exchanges()->Get(0));
    REQUIRE(traffic.size() == 4);
    CHECK(traffic[0].tile == 0);
    CHECK(traffic[0].sentOn == 12);
    CHECK(traffic[1].recvOn == 16);
    CHECK(traffic[2].recvOn == 8);
    CHECK(popc::runtime::exchangeCost(*r->target(), *r->exchanges()->Get(0)).transfer == 4);
    CHECK(popc::runtime::exchangeCost(*r->target(), *r->exchanges()->Get(0)).bytes == 32);
  }
}

TEST_CASE("replicaChunks: each replica's chunks of a host array, or all of a shared one", "[runtime][replicas]") {
  using popc::runtime::replicaChunks;
  // 2 executions x 4 replicas of 8-byte chunks; replicas 1-2 take chunks 1, 2, 5, 6
  auto r = replicaChunks(64, 8, 4, 1, 2);
  REQUIRE(r.size() == 2);
  CHECK((r[0].offset == 8 && r[0].bytes == 16));
  CHECK((r[1].offset == 40 && r[1].bytes == 16));
  auto shared = replicaChunks(8, 8, 4, 3, 1); // one chunk read by every replica
  REQUIRE(shared.size() == 1);
  CHECK((shared[0].offset == 0 && shared[0].bytes == 8));
}

namespace {

// A ReplicaLink for one engine that holds replica `first` of 2: the other
// replica "lives elsewhere"; its broadcasts deliver `remote`.
struct FakeReplicaLink : popc::runtime::ReplicaLink {
  uint32_t first = 0;
  std::vector<float> remote, sent;
  std::vector<uint32_t> calls;
  uint32_t firstReplica() const override { return first; }
  uint32_t localReplicas() const override { return 1; }
  uint32_t instances() const override { return 2; }
  void broadcastFromReplica(uint32_t from, std::span<uint8_t> bytes) override {
    calls.push_back(from);
    REQUIRE(bytes.size() == 16);
    if (from == first) {
      sent.resize(4);
      std::memcpy(sent.data(), bytes.data(), 16);
    } else {
      std::memcpy(bytes.data(), remote.data(), 16);
    }
  }
};

} // namespace

TEST_CASE("an engine holding some replicas exchanges across instances through its ReplicaLink", "[runtime][replicas]") {
  // The sample with 2 replicas whose exchange reads replica 0's sum (an all-reduce's step).
  auto exe = popc::test::makeSampleExecutable(makeBitcode(Variant::Add));
  exe.target->replication_factor = 2;
  exe.exchanges[0]->from_replica = 0;
  for (auto *list : {&exe.metadata->inputs, &exe.metadata->outputs})
    (*list)[0]->host_shape = {2, 4};
  HostTensor a{popc::DType::F32, {2, 4}, std::vector<uint8_t>(32)};
  const float values[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  std::memcpy(a.data.data(), values, sizeof values);
  const std::shared_ptr<const popc::popef::Executable> file = build(exe);

  // One process, both replicas: each gets replica 0's sum (a[0:4] + b).
  Engine all(file);
  CHECK(floats(all.run({{"a", a}})["out"]) == std::vector<float>{11, 22, 33, 44, 11, 22, 33, 44});
  const uint64_t cycles = all.report().cycles.total();

  // Instance 0 holds replica 0: it hands its own sum to the link and keeps it.
  auto link0 = std::make_shared<FakeReplicaLink>();
  popc::runtime::EngineOptions o0;
  o0.replicaLink = link0;
  Engine first(file, o0);
  CHECK(floats(first.run({{"a", a}})["out"]) == std::vector<float>{11, 22, 33, 44, 0, 0, 0, 0});
  CHECK(link0->calls == std::vector<uint32_t>{0});
  CHECK(link0->sent == std::vector<float>{11, 22, 33, 44});

  // Instance 1 holds replica 1: it reads its own input chunk, and the step's bytes come over the link.
  auto link1 = std::make_shared<FakeReplicaLink>();
  link1->first = 1;
  link1->remote = {100, 200, 300, 400};
  popc::runtime::EngineOptions o1;
  o1.replicaLink = link1;
  Engine second(file, o1);
  CHECK(floats(second.run({{"a", a}})["out"]) == std::vector<float>{0, 0, 0, 0, 100, 200, 300, 400});
  const auto &r = second.report();
  CHECK((r.instances == 2 && r.firstReplica == 1 && r.replicas == 1 && r.totalReplicas == 2));
  CHECK(r.hostAllReduceBytes == 16);
  CHECK(r.exchanges[0].hostLink);
  // The host link: global sync + twice 16 bytes at 8 per cycle, in the host phase;
  // both instances charge the same, which differs from the IPU links in one process.
  CHECK(r.exchanges[0].syncCyclesPerRun == 1000);
  CHECK(r.exchanges[0].transferCyclesPerRun == 4);
  CHECK(first.report().cycles.total() == r.cycles.total());
  CHECK(r.cycles.total() != cycles);

  // A link naming replicas the executable lacks is refused.
  auto bad = std::make_shared<FakeReplicaLink>();
  bad->first = 2;
  popc::runtime::EngineOptions ob;
  ob.replicaLink = bad;
  CHECK_THROWS_WITH(Engine(file, ob), Catch::Contains("replicas 2 to 2 do not exist: the executable has 2"));
}

TEST_CASE("a repeated vertex plans the same calls and cycles as its repetitions written out", "[runtime]") {
  // Tile 0 runs four vertices of one type on consecutive 8-byte slices (the
  // first field shared), tile 1 one: folded, tile 0's four are one vertex.
  // With 3 fields, and with 70 (more than a run keeps on the stack).
  const uint32_t nf = GENERATE(3u, 70u);
  auto exe = popc::test::makeSampleExecutable({1});
  while (exe.vertex_types[0]->fields.size() < nf)
    exe.vertex_types[0]->fields.push_back(std::make_unique<fb::FieldDeclT>(*exe.vertex_types[0]->fields[1]));
  fb::ComputeSetT &cs = *exe.compute_sets[0];
  cs.vertices = {{0, 0, 0}, {0, 0, nf}, {0, 0, 2 * nf}, {0, 0, 3 * nf}, {0, 1, 4 * nf}};
  cs.field_offsets.clear();
  for (uint32_t v = 0; v < 5; ++v)
    for (uint32_t f = 0; f < nf; ++f)
      cs.field_offsets.push_back(f == 0 ? 0 : 16 * f + (v < 4 ? 8 * v : 0));
  auto plan = [&](const fb::ExecutableT &e) {
    const auto bytes = popc::popef::serialize(e);
    const auto *root = fb::GetExecutable(bytes.data());
    popc::runtime::DeviceMemory memory(4, 1024);
    popc::runtime::ReplicaTiles tiles{memory, 1, 4};
    const std::vector<popc::runtime::VertexFn> fns(1, nullptr);
    auto p = popc::runtime::planComputeSet(*root, 0, tiles, fns, 1);
    std::vector<std::vector<uint32_t>> fields;
    // The memory fields a run asks the cache for ahead of each tile: those its calls use.
    std::vector<std::pair<const uint8_t *, uint32_t>> spans, used;
    for (const auto &tw : p.tiles) {
      p.forEachCall(tw, [&](popc::runtime::VertexFn, const uint32_t *f) { fields.emplace_back(f, f + nf); });
      p.forEachKindCall(tw, [&](const popc::runtime::VertexKind &kind, const uint32_t *f) {
        for (uint32_t k = kind.spansBegin; k < kind.spansEnd; ++k)
          used.emplace_back(tw.base + f[p.spans[k].field], p.spans[k].bytes);
      });
      p.forEachFieldSpan(tw, [&](const uint8_t *at, uint32_t bytes) {
        spans.emplace_back(at, bytes);
        return true;
      });
    }
    CHECK(spans == used);
    CHECK(spans.size() == 5 * nf); // every field of the sample's type is memory
    return std::tuple(fields, p.cycles, p.runs.size());
  };
  const auto [written, writtenCycles, writtenRuns] = plan(exe);
  CHECK(written.size() == 5);
  CHECK(writtenRuns == 2); // the four on tile 0 are one run: their field tables follow each other
  popc::popef::foldVertices(cs, {nf});
  REQUIRE(cs.vertices.size() == 2);
  REQUIRE(cs.vertex_repeats.size() == 1);
  CHECK(cs.vertex_repeats[0].repeat() == 3);
  std::vector<uint32_t> strides(nf, 8);
  strides[0] = 0;
  CHECK(cs.field_strides == strides);
  const auto [folded, foldedCycles, foldedRuns] = plan(exe);
  CHECK(folded == written);
  CHECK(foldedCycles == writtenCycles);
}

TEST_CASE("an exchange step copies the same bytes whether its pieces are held packed or wide", "[runtime]") {
  // One IPU of 4 tiles. Pieces of under 64 KiB, strided by under 64 KiB, are
  // held in 12 bytes; a step with one of 70,000 bytes, or strided by 70,000,
  // keeps them all in the 24-byte form.
  constexpr uint32_t kTileBytes = 300000;
  auto initial = [](uint32_t t, uint32_t i) { return uint8_t(t * 31 + i * 7 + i / 251); };
  auto run = [&](uint32_t bigBytes, uint32_t dstStride) {
    auto exe = popc::test::makeSampleExecutable({1});
    exe.target->num_ipus = 1;
    exe.target->tiles_per_ipu = 4;
    exe.target->bytes_per_tile = kTileBytes;
    popc::popef::setCopies(*exe.exchanges[0], {popc::popef::singleCopy(0, 0, 1, 0, 24),
                                               ::popef::fb::Copy(0, 100, 1, 1000, 8, 3, 12, dstStride),
                                               popc::popef::singleCopy(2, 0, 3, 0, bigBytes)});
    const auto bytes = popc::popef::serialize(exe);
    const auto *root = fb::GetExecutable(bytes.data());
    popc::runtime::DeviceMemory memory(4, kTileBytes);
    for (uint32_t t = 0; t < 4; ++t)
      for (uint32_t i = 0; i < kTileBytes; ++i)
        memory.tile(t)[i] = initial(t, i);
    popc::runtime::ReplicaTiles tiles{memory, 1, 4};
    popc::runtime::ThreadPool pool(2);
    const auto plan = popc::runtime::planExchange(*root, 0, tiles, true, false, pool.size());
    popc::runtime::performLocalCopies(plan, pool);
    // Against the copies done by hand on the same initial bytes.
    std::vector<uint8_t> expected(kTileBytes);
    for (uint32_t i = 0; i < kTileBytes; ++i)
      expected[i] = initial(1, i);
    for (uint32_t i = 0; i < 24; ++i)
      expected[i] = initial(0, i);
    for (uint32_t k = 0; k < 4; ++k)
      for (uint32_t i = 0; i < 8; ++i)
        expected[1000 + k * dstStride + i] = initial(0, 100 + k * 12 + i);
    CHECK(std::equal(expected.begin(), expected.end(), memory.tile(1)));
    for (uint32_t i = 0; i < bigBytes; ++i)
      expected[i] = initial(2, i);
    CHECK(std::equal(expected.begin(), expected.begin() + bigBytes, memory.tile(3)));
    return std::pair(plan.packedPieces.size(), plan.pieces.size());
  };
  CHECK(run(60000, 16) == std::pair<size_t, size_t>(3, 0));
  CHECK(run(70000, 16) == std::pair<size_t, size_t>(0, 3));
  CHECK(run(60000, 70000) == std::pair<size_t, size_t>(0, 3));
}
