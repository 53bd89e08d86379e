// A tiny hand-built executable shared by the popef and runtime tests.
//
// Target: 2 IPUs x 2 tiles, 1024 bytes per tile. out = a + b (float32[4]):
//   a (input) and b (constant) are split over tiles 0 and 1; one vertex per tile
//   adds its halves into `sum`; an exchange moves sum to tiles 2 and 3 (across
//   the IPU boundary), where the output stream reads it.
#pragma once
#include "formats/popef/popef.h"

#include <cstring>

namespace popc::test {

namespace fb = ::popef::fb;

inline std::unique_ptr<fb::TensorT> sampleTensor(const std::string &name, fb::TensorRole role,
                                                 std::vector<fb::TileInterval> mapping,
                                                 int constant = -1) {
  auto t = std::make_unique<fb::TensorT>();
  t->name = name;
  t->dtype = fb::DType::F32;
  t->shape = {4};
  t->role = role;
  t->mapping = std::move(mapping);
  t->constant = constant;
  return t;
}

inline std::unique_ptr<fb::ProgramT> sampleProgram(fb::ProgramKind kind, uint32_t index = 0) {
  auto p = std::make_unique<fb::ProgramT>();
  p->kind = kind;
  p->index = index;
  return p;
}

// The copy records of a step packed by popef::setCopies, for tests that edit one.
inline std::vector<fb::Copy> copiesOf(const fb::ExchangeStepT &step) {
  std::vector<fb::Copy> out;
  for (const fb::Placement &at : step.placements)
    popc::popef::forEachCopyOf(at, step.pieces.data(), [&](const fb::Copy &c) { out.push_back(c); });
  return out;
}
// Replaces record k of the step (and packs the records again).
inline void setCopy(fb::ExchangeStepT &step, size_t k, const fb::Copy &c) {
  std::vector<fb::Copy> records = copiesOf(step);
  records.at(k) = c;
  popc::popef::setCopies(step, records);
}

inline fb::ExecutableT makeSampleExecutable(std::vector<uint8_t> bitcode,
                                            const std::string &symbol = "add_f32_2") {
  fb::ExecutableT exe;
  exe.format_version = popc::popef::kFormatVersion;
  exe.compiler_version = "test";
  exe.target = std::make_unique<fb::TargetT>();
  auto &t = *exe.target;
  t.arch = "ipu2";
  t.num_ipus = 2;
  t.tiles_per_ipu = 2;
  t.bytes_per_tile = 1024;
  t.workers_per_tile = 6;
  t.clock_hz = 1330000000;
  t.exchange_bytes_per_cycle = 4;
  t.inter_ipu_bytes_per_cycle = 2;
  t.host_bytes_per_cycle = 8;
  t.sync_cycles = 100;
  t.global_sync_cycles = 1000;

  exe.tensors.push_back(sampleTensor("a", fb::TensorRole::Input, {{0, 8, 0, 0}, {8, 8, 1, 0}}));
  exe.tensors.push_back(sampleTensor("b", fb::TensorRole::Constant, {{0, 8, 0, 16}, {8, 8, 1, 16}}, 0));
  exe.tensors.push_back(sampleTensor("sum", fb::TensorRole::Intermediate, {{0, 8, 0, 32}, {8, 8, 1, 32}}));
  exe.tensors.push_back(sampleTensor("out", fb::TensorRole::Output, {{0, 8, 2, 0}, {8, 8, 3, 0}}));

  auto c = std::make_unique<fb::ConstantDataT>();
  float b[4] = {10, 20, 30, 40};
  c->data.resize(sizeof b);
  std::memcpy(c->data.data(), b, sizeof b);
  exe.constants.push_back(std::move(c));

  auto code = std::make_unique<fb::CodeModuleT>();
  code->bitcode = std::move(bitcode);
  exe.code.push_back(std::move(code));

  auto vt = std::make_unique<fb::VertexTypeT>();
  vt->name = "Add_2_f32";
  vt->symbol = symbol;
  vt->module_ = 0;
  vt->cycles = 10;
  for (const char *f : {"in0", "in1", "out"}) {
    auto d = std::make_unique<fb::FieldDeclT>();
    d->name = f;
    d->bytes = 8;
    d->access = std::string(f) == "out" ? fb::FieldAccess::Output : fb::FieldAccess::Input;
    vt->fields.push_back(std::move(d));
  }
  exe.vertex_types.push_back(std::move(vt));

  auto cs = std::make_unique<fb::ComputeSetT>();
  cs->name = "add";
  cs->vertices = {{0, 0, 0}, {0, 1, 3}};
  cs->field_offsets = {0, 16, 32, 0, 16, 32};
  exe.compute_sets.push_back(std::move(cs));

  auto ex = std::make_unique<fb::ExchangeStepT>();
  ex->name = "move";
  popc::popef::setCopies(*ex, {popc::popef::singleCopy(0, 32, 2, 0, 8), popc::popef::singleCopy(1, 32, 3, 0, 8)});
  exe.exchanges.push_back(std::move(ex));

  for (auto [name, tensor, dir] : {std::tuple{"a", 0u, fb::StreamDirection::HostToDevice},
                                   std::tuple{"out", 3u, fb::StreamDirection::DeviceToHost}}) {
    auto s = std::make_unique<fb::HostStreamT>();
    s->name = name;
    s->tensor = tensor;
    s->direction = dir;
    exe.streams.push_back(std::move(s));
  }

  exe.main = sampleProgram(fb::ProgramKind::Sequence);
  exe.main->name = "main";
  exe.main->children.push_back(sampleProgram(fb::ProgramKind::StreamCopy, 0));
  exe.main->children.push_back(sampleProgram(fb::ProgramKind::Execute, 0));
  exe.main->children.push_back(sampleProgram(fb::ProgramKind::Sync));
  exe.main->children.push_back(sampleProgram(fb::ProgramKind::Exchange, 0));
  exe.main->children.push_back(sampleProgram(fb::ProgramKind::StreamCopy, 1));

  exe.metadata = std::make_unique<fb::MetadataT>();
  exe.metadata->model_name = "sample";
  auto io = [](const char *name, uint32_t tensor, uint32_t stream) {
    auto i = std::make_unique<fb::IoInfoT>();
    i->name = name;
    i->dtype = fb::DType::F32;
    i->shape = {4};
    i->tensor = tensor;
    i->stream = stream;
    return i;
  };
  exe.metadata->inputs.push_back(io("a", 0, 0));
  exe.metadata->outputs.push_back(io("out", 3, 1));
  exe.tile_bytes_used = {48, 48, 8, 8};
  return exe;
}

// Gives the sample's vertex type a fourth field, an immediate (format 6)
// declaring `bytes` (valid: 0), whose value is `value` in both vertices'
// field tables. The sample's code does not read it.
inline void addImmediateField(fb::ExecutableT &e, uint32_t bytes, uint32_t value) {
  auto d = std::make_unique<fb::FieldDeclT>();
  d->name = "elements";
  d->bytes = bytes;
  d->access = fb::FieldAccess::Immediate;
  e.vertex_types[0]->fields.push_back(std::move(d));
  e.compute_sets[0]->vertices = {{0, 0, 0}, {0, 1, 4}};
  e.compute_sets[0]->field_offsets = {0, 16, 32, value, 0, 16, 32, value};
}

// The sample serialized with its constants in the data segment (format 4);
// `kept` receives their bytes. `nameBytes`: the first tensor's name that long
// (a bigger schedule), when given.
inline std::vector<uint8_t> segmentSampleBytes(std::vector<std::vector<uint8_t>> &kept, size_t sizeHint = 0,
                                               size_t nameBytes = 0) {
  auto exe = makeSampleExecutable({'B', 'C', 0xC0, 0xDE, 1, 2, 3, 4});
  if (nameBytes)
    exe.tensors[0]->name = std::string(nameBytes, 'n');
  std::vector<std::span<const uint8_t>> segment;
  for (auto &c : exe.constants) {
    kept.push_back(std::move(c->data));
    c->data.clear();
  }
  for (const auto &k : kept)
    segment.emplace_back(k);
  return popef::serialize(exe, sizeHint, segment);
}

} // namespace popc::test
