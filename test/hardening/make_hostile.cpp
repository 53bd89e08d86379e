// Writes the hostile-executable corpus: crafted popefs that must be refused at
// load time with a one-line reason, or bounded by a documented limit (memory
// budget, --timeout, the memory sandbox) — never executed as written.
//
//   make_hostile OUT_DIR [FINDINGS_DIR]
//
// FINDINGS_DIR (fuzz/findings) adds one case per bitcode file there that
// crashes LLVM's reader, embedded in a popef with valid checksums.
//
// writes OUT_DIR/<case>.popef, OUT_DIR/inputs.npz, OUT_DIR/expected.npz and
// OUT_DIR/cases.tsv: one line per case, tab-separated: name, expected exit
// code of poprun-lite, a substring its one-line error must contain (or
// "expected.npz" when the run must succeed with the reference outputs), and
// extra poprun-lite arguments. run_hostile.sh runs them. Every case starts
// from the sample executable of the runtime tests (out = a + b on 4 tiles).
#include "formats/npz/npz.h"
#include "formats/popef/popef.h"
#include "test/unit/popef/sample_executable.h"

#include <zstd.h>

#include <llvm/AsmParser/Parser.h>
#include <llvm/Bitcode/BitcodeWriter.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <iterator>
#include <set>

namespace {

namespace fb = ::popef::fb;
namespace fs = std::filesystem;
using popc::test::makeSampleExecutable;
using popc::test::sampleProgram;

// The sample's vertex (out[i] = in0[i] + in1[i], 2 floats) as IR text; `extra`
// goes before the return, `decls` after the function, `top` before it.
std::string vertexIr(const std::string &extra = "", const std::string &decls = "", const std::string &top = "") {
  return top + R"(
define void @add_f32_2(ptr %base, ptr %offs) {
entry:
  %o0 = load i32, ptr %offs
  %q1 = getelementptr i32, ptr %offs, i64 1
  %o1 = load i32, ptr %q1
  %q2 = getelementptr i32, ptr %offs, i64 2
  %o2 = load i32, ptr %q2
  %z0 = zext i32 %o0 to i64
  %z1 = zext i32 %o1 to i64
  %z2 = zext i32 %o2 to i64
  %a = getelementptr i8, ptr %base, i64 %z0
  %b = getelementptr i8, ptr %base, i64 %z1
  %c = getelementptr i8, ptr %base, i64 %z2
  %a0 = load float, ptr %a
  %b0 = load float, ptr %b
  %s0 = fadd float %a0, %b0
  store float %s0, ptr %c
  %a1p = getelementptr float, ptr %a, i64 1
  %b1p = getelementptr float, ptr %b, i64 1
  %c1p = getelementptr float, ptr %c, i64 1
  %a1 = load float, ptr %a1p
  %b1 = load float, ptr %b1p
  %s1 = fadd float %a1, %b1
  store float %s1, ptr %c1p
)" + extra + R"(
  ret void
}
)" + decls;
}

std::vector<uint8_t> bitcode(const std::string &ir) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic err;
  auto m = llvm::parseAssemblyString(ir, err, ctx);
  if (!m) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    err.print("make_hostile", os);
    std::cerr << os.str() << "\n" << ir << "\n";
    std::exit(2);
  }
  std::string bytes;
  llvm::raw_string_ostream os(bytes);
  llvm::WriteBitcodeToFile(*m, os);
  os.flush();
  return {bytes.begin(), bytes.end()};
}

fb::ExecutableT sample(const std::string &ir = vertexIr()) { return makeSampleExecutable(bitcode(ir)); }

struct Writer {
  fs::path dir;
  std::ofstream tsv;

  void bytes(const std::string &name, const std::vector<uint8_t> &b, int rc, const std::string &want,
             const std::string &args = "") {
    std::ofstream(dir / (name + ".popef"), std::ios::binary).write(reinterpret_cast<const char *>(b.data()), b.size());
    tsv << name << '\t' << rc << '\t' << want << '\t' << args << '\n';
  }
  void exe(const std::string &name, const fb::ExecutableT &e, int rc, const std::string &want,
           const std::string &args = "") {
    bytes(name, popc::popef::serialize(e), rc, want, args);
  }
  // Refused by the bitcode gate at load time.
  void gate(const std::string &name, const std::string &ir, const std::string &want) {
    exe(name, sample(ir), 1, want);
  }
};

// Patches the serialized file in place (the buffer stays a flatbuffer whose
// trailer is recomputed), for fields the object API cannot express: lengths
// that do not match the data behind them.
std::vector<uint8_t> patchVertexCount(std::vector<uint8_t> b, uint32_t count) {
  const fb::Executable *root = fb::GetExecutable(b.data());
  const uint8_t *data = reinterpret_cast<const uint8_t *>(root->compute_sets()->Get(0)->vertices()->Data());
  size_t at = data - b.data() - 4;
  std::memcpy(b.data() + at, &count, 4);
  popc::popef::seal(b);
  return b;
}

// main = Sequence nested `levels` deep around one Sync, built bottom-up with
// the builder API (the object API would recurse once per level, twice over).
std::vector<uint8_t> deepProgram(fb::ExecutableT e, uint32_t levels) {
  for (auto &c : e.code)
    c->xxh64 = popc::popef::checksum(c->bitcode);
  for (auto &c : e.constants)
    c->xxh64 = popc::popef::checksum(c->data);
  flatbuffers::FlatBufferBuilder b(1 << 20);
  auto p = fb::CreateProgram(b, fb::ProgramKind::Sync);
  for (uint32_t i = 0; i < levels; ++i) {
    std::vector<flatbuffers::Offset<fb::Program>> kids{p};
    p = fb::CreateProgram(b, fb::ProgramKind::Sequence, 0, 0, b.CreateVector(kids));
  }
  auto packVec = [&](auto &vec, auto packOne) {
    using Off = decltype(packOne(vec[0].get()));
    std::vector<Off> offs;
    for (auto &x : vec)
      offs.push_back(packOne(x.get()));
    return b.CreateVector(offs);
  };
  auto tensors = packVec(e.tensors, [&](const fb::TensorT *t) { return fb::Tensor::Pack(b, t); });
  auto constants = packVec(e.constants, [&](const fb::ConstantDataT *t) { return fb::ConstantData::Pack(b, t); });
  auto code = packVec(e.code, [&](const fb::CodeModuleT *t) { return fb::CodeModule::Pack(b, t); });
  auto types = packVec(e.vertex_types, [&](const fb::VertexTypeT *t) { return fb::VertexType::Pack(b, t); });
  auto sets = packVec(e.compute_sets, [&](const fb::ComputeSetT *t) { return fb::ComputeSet::Pack(b, t); });
  auto steps = packVec(e.exchanges, [&](const fb::ExchangeStepT *t) { return fb::ExchangeStep::Pack(b, t); });
  auto streams = packVec(e.streams, [&](const fb::HostStreamT *t) { return fb::HostStream::Pack(b, t); });
  auto root = fb::CreateExecutable(b, e.format_version, b.CreateString(e.compiler_version),
                                   fb::Target::Pack(b, e.target.get()), fb::Metadata::Pack(b, e.metadata.get()),
                                   tensors, constants, code, types, sets, steps, streams, 0, p,
                                   b.CreateVector(e.tile_bytes_used));
  b.Finish(root, "POPF");
  std::vector<uint8_t> out(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  popc::popef::seal(out);
  return out;
}

// `packed` (a compressed popef) with its schedule replaced by a frame of
// `bytes` zeros, compressed a chunk at a time (no buffer of that size), and
// the header's sizes to match.
std::vector<uint8_t> zstdBomb(const std::vector<uint8_t> &packed, uint64_t bytes) {
  ZSTD_CCtx *cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setPledgedSrcSize(cctx, bytes);
  std::vector<uint8_t> zeros(1 << 20, 0), frame, out(ZSTD_CStreamOutSize());
  for (uint64_t done = 0; done < bytes;) {
    const size_t n = size_t(std::min<uint64_t>(zeros.size(), bytes - done));
    done += n;
    ZSTD_inBuffer in{zeros.data(), n, 0};
    const ZSTD_EndDirective mode = done == bytes ? ZSTD_e_end : ZSTD_e_continue;
    for (size_t left = 1; in.pos < in.size || (mode == ZSTD_e_end && left);) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      left = ZSTD_compressStream2(cctx, &o, &in, mode);
      frame.insert(frame.end(), out.data(), out.data() + o.pos);
    }
  }
  ZSTD_freeCCtx(cctx);
  uint64_t segmentOffset = 0, segmentBytes = 0;
  std::memcpy(&segmentOffset, packed.data() + 32, 8);
  std::memcpy(&segmentBytes, packed.data() + 40, 8);
  std::vector<uint8_t> b(packed.begin(), packed.begin() + 64);
  b.insert(b.end(), frame.begin(), frame.end());
  b.resize((b.size() + 63) / 64 * 64, 0);
  const uint64_t newOffset = b.size();
  b.insert(b.end(), packed.begin() + segmentOffset, packed.begin() + segmentOffset + segmentBytes);
  const uint64_t frameBytes = frame.size(), start = (bytes + 63) / 64 * 64;
  std::memcpy(b.data() + 8, &bytes, 8);
  std::memcpy(b.data() + 16, &frameBytes, 8);
  std::memcpy(b.data() + 24, &start, 8);
  std::memcpy(b.data() + 32, &newOffset, 8);
  popc::popef::seal(b);
  return b;
}

std::unique_ptr<fb::ProgramT> repeat(uint32_t count, std::unique_ptr<fb::ProgramT> child) {
  auto p = sampleProgram(fb::ProgramKind::Repeat);
  p->count = count;
  p->children.push_back(std::move(child));
  return p;
}

void writeArrays(const fs::path &dir) {
  float a[4] = {1, 2, 3, 4}, out[4] = {11, 22, 33, 44};
  popc::npz::writeNpz((dir / "inputs.npz").string(), {{"a", popc::npz::makeArray(popc::DType::F32, {4}, a)}});
  popc::npz::writeNpz((dir / "expected.npz").string(), {{"out", popc::npz::makeArray(popc::DType::F32, {4}, out)}});
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2 && argc != 3) {
    std::fprintf(stderr, "usage: make_hostile OUT_DIR [FINDINGS_DIR]\n");
    return 2;
  }
  Writer w{argv[1], {}};
  fs::create_directories(w.dir);
  w.tsv.open(w.dir / "cases.tsv");
  writeArrays(w.dir);

  // Control: the unmodified sample runs and matches its reference.
  w.exe("valid_sample", sample(), 0, "expected.npz");

  // --- bitcode the gate must refuse -------------------------------------
  w.gate("bc_calls_system", vertexIr("  %r = call i32 @system(ptr null)", "declare i32 @system(ptr)"),
         "call to external function 'system' is not allowed");
  w.gate("bc_calls_fopen", vertexIr("  %f = call ptr @fopen(ptr null, ptr null)", "declare ptr @fopen(ptr, ptr)"),
         "call to external function 'fopen' is not allowed");
  w.gate("bc_calls_dlopen", vertexIr("  %h = call ptr @dlopen(ptr null, i32 2)", "declare ptr @dlopen(ptr, i32)"),
         "call to external function 'dlopen' is not allowed");
  w.gate("bc_calls_execve",
         vertexIr("  %r = call i32 @execve(ptr null, ptr null, ptr null)", "declare i32 @execve(ptr, ptr, ptr)"),
         "'execve' is not allowed");
  w.gate("bc_declares_mmap", vertexIr("", "declare ptr @mmap(ptr, i64, i32, i32, i32, i64)"),
         "reference to external function 'mmap' is not allowed");
  w.gate("bc_calls_syscall_variadic",
         vertexIr("  %r = call i64 (i64, ...) @syscall(i64 59)", "declare i64 @syscall(i64, ...)"),
         "'syscall' is not allowed");
  w.gate("bc_inline_asm", vertexIr("  call void asm sideeffect \"syscall\", \"\"()"), "inline assembly");
  w.gate("bc_module_asm", vertexIr("", "", "module asm \".globl evil\"\n"),
         "module-level inline assembly is not allowed");
  w.gate("bc_external_global", vertexIr("  %e = load ptr, ptr @environ", "", "@environ = external global ptr\n"),
         "reference to external global 'environ' is not allowed");
  w.gate("bc_global_ctor",
         vertexIr("", "define internal void @init() {\n  ret void\n}\n",
                  "@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] "
                  "[{ i32, ptr, ptr } { i32 65535, ptr @init, ptr null }]\n"),
         "special global 'llvm.global_ctors' is not allowed");
  w.gate("bc_indirect_call", vertexIr("  %fp = inttoptr i64 4198400 to ptr\n  call void %fp()"),
         "makes an indirect call");
  w.gate("bc_trap_intrinsic", vertexIr("  call void @llvm.trap()", "declare void @llvm.trap()"),
         "intrinsic 'llvm.trap' is not allowed");
  w.gate("bc_libm_wrong_type", vertexIr("  %x = call float @expf(ptr null)", "declare float @expf(ptr)"),
         "function 'expf' is declared with the wrong type");
  w.gate("bc_alias", vertexIr("", "@evil = alias void (ptr, ptr), ptr @add_f32_2\n"), "global alias 'evil'");
  w.gate("bc_thread_local", vertexIr("  store i32 1, ptr @tls", "", "@tls = internal thread_local global i32 0\n"),
         "thread-local global 'tls'");
  w.gate("bc_atomic", vertexIr("  %old = atomicrmw add ptr %a, i32 1 seq_cst"), "atomic");
  {
    auto e = sample();
    e.code[0]->bitcode = {'B', 'C', 0xc0, 0xde, 0x35, 0x14, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x62, 0x0c};
    w.exe("bc_garbage", e, 1, "invalid bitcode");
  }
  // Bitcode that crashes LLVM's reader or verifier (fuzz/findings): the
  // child-process probe must turn each into a one-line refusal.
  if (argc == 3)
    for (const auto &f : std::set<fs::path>(fs::directory_iterator(argv[2]), fs::directory_iterator())) {
      const std::string stem = f.stem().string();
      if (f.extension() != ".bc" || stem.rfind("bitcode-leak", 0) == 0)
        continue; // leaks are findings only under LeakSanitizer
      std::ifstream in(f, std::ios::binary);
      auto e = sample();
      e.code[0]->bitcode.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      if (stem.rfind("bitcode-hang", 0) == 0) {
        // Without --timeout the probe refuses it after its 60 s; --timeout
        // stops the load well before (the child dies with poprun-lite).
        w.exe("llvm_hang_" + stem.substr(std::string("bitcode-hang-").size()), e, 3, "stopped by --timeout",
              "--timeout 1");
        continue;
      }
      // A heap-dependent crash may not reproduce in the checking child, which
      // then refuses the module cleanly; what matters is that it is refused.
      const bool heapDependent = stem.rfind("bitcode-heapdependent", 0) == 0;
      w.exe("llvm_crash_" + stem.substr(stem.find('-') + 1), e, 1,
            heapDependent ? "code module 0: " : "LLVM's bitcode reader");
    }
  {
    auto e = sample();
    e.vertex_types[0]->symbol = "system";
    w.exe("bc_entry_is_libc", e, 1, "entry function 'system' is not defined in the module");
  }

  // --- vertex code the sandbox bounds (runs, cannot escape its tile) ------
  // A store 1 TiB below the tile base lands inside the tile's own window; the
  // outputs are still right (it hits in0 after the sum is stored).
  w.exe("bc_store_far_outside_tile",
        sample(vertexIr("  %far = getelementptr i8, ptr %base, i64 -1099511627776\n  store float 9.0, ptr %far")), 0,
        "expected.npz");
  w.exe("bc_store_to_absolute_address",
        sample(vertexIr("  %abs = inttoptr i64 140737488289792 to ptr\n  store float 9.0, ptr %abs")), 0,
        "expected.npz");
  // A vertex that never returns: only --timeout (its grace period) stops it.
  w.exe("bc_endless_loop", sample(vertexIr("  br label %spin\nspin:\n  br label %spin\nexit:")), 3,
        "stopped by --timeout", "--timeout 1");

  // --- ranges outside tile memory ----------------------------------------
  {
    auto e = sample();
    e.compute_sets[0]->field_offsets[2] = 1020; // 8-byte field at 1020 of a 1024-byte tile
    w.exe("field_past_tile_end", e, 1, "compute_sets[0].vertices[0]: field 2 range [1020, 1028) exceeds tile memory");
  }
  {
    auto e = sample();
    e.compute_sets[0]->field_offsets[0] = 0xFFFFFFF0u;
    w.exe("field_offset_wraps", e, 1, "field 0 range [4294967280, 4294967288) exceeds tile memory");
  }
  {
    // An immediate (format 6) is a number, not memory: far past the tile it is
    // never range-checked, and the vertex, which does not read it, runs.
    auto e = sample();
    popc::test::addImmediateField(e, 0, 0xFFFFFFF0u);
    w.exe("immediate_field_huge_value", e, 0, "expected.npz");
  }
  {
    auto e = sample();
    popc::test::addImmediateField(e, 8, 0);
    w.exe("immediate_field_declares_bytes", e, 1, "is an immediate (a number, not memory) but declares 8 bytes");
  }
  {
    auto e = sample();
    e.compute_sets[0]->vertices[1] = fb::Vertex(0, 99, 3);
    w.exe("vertex_tile_out_of_range", e, 1, "tile 99 out of range (target has 4 tiles)");
  }
  {
    auto e = sample();
    e.compute_sets[0]->vertices[1] = fb::Vertex(0, 1, 5);
    w.exe("vertex_fields_past_table", e, 1, "fields [5, 8) exceed field_offsets size 6");
  }
  {
    auto e = sample();
    e.compute_sets[0]->vertices[0] = fb::Vertex(7, 0, 0);
    w.exe("vertex_type_out_of_range", e, 1, "vertex type 7 out of range");
  }
  {
    auto e = sample();
    popc::test::setCopy(*e.exchanges[0], 0, popc::popef::singleCopy(0, 32, 2, 1020, 8));
    w.exe("copy_past_tile_end", e, 1, "exchanges[0].placements[0]: destination range [1020, 1028) exceeds tile memory");
  }
  {
    auto e = sample();
    popc::test::setCopy(*e.exchanges[0], 0, popc::popef::singleCopy(0, 0xFFFFFFFCu, 2, 0, 8));
    w.exe("copy_source_wraps", e, 1, "source range [4294967292, 4294967300) exceeds tile memory");
  }
  {
    auto e = sample();
    popc::test::setCopy(*e.exchanges[0], 0, popc::popef::singleCopy(5, 32, 2, 0, 8));
    w.exe("copy_tile_out_of_range", e, 1, "src_tile 5 out of range");
  }
  {
    auto e = sample();
    e.tile_bytes_used.clear(); // tile 2's 8 planned bytes would refuse it first
    popc::test::setCopy(*e.exchanges[0], 1, popc::popef::singleCopy(1, 32, 2, 4, 8));
    w.exe("copies_overlap", e, 1, "destination overlaps placements[0] on tile 2");
  }
  // Within bytes_per_tile but past the tile's planned bytes: the runner gives
  // tile 2 just those (and the next tile's window follows them).
  {
    auto e = sample();
    popc::test::setCopy(*e.exchanges[0], 1, popc::popef::singleCopy(1, 32, 2, 600, 8));
    w.exe("copy_past_planned_memory", e, 1,
          "destination range [600, 608) on tile 2 exceeds the tile's planned memory (tile_bytes_used[2] = 8)");
  }
  {
    auto e = sample();
    e.tensors[0]->mapping[1] = fb::TileInterval(8, 8, 1, 1020);
    w.exe("tensor_interval_past_tile_end", e, 1, "tensors[0] 'a'.mapping[1]: interval range [1020, 1028)");
  }
  // 100k one-byte copies into tile 0 and 100k copies out of tile 0 beyond
  // them: valid, and the overlap check must stay O(n log n) (it was O(n^2):
  // minutes for this file).
  {
    auto e = sample();
    e.target->bytes_per_tile = 1 << 20;
    e.tile_bytes_used.clear(); // every tile may use its 1 MiB
    const uint32_t n = 100000;
    std::vector<fb::Copy> copies = popc::test::copiesOf(*e.exchanges[0]);
    for (uint32_t i = 0; i < n; ++i) { // (distinct sources: 100k placements of 200k pieces)
      copies.push_back(popc::popef::singleCopy(1, 2 * n + 8192 + i, 0, 4096 + 2 * i, 1)); // into tile 0
      copies.push_back(popc::popef::singleCopy(0, 4096 + 2 * n + i, 1, 4096 + 2 * i, 1)); // out of tile 0, past those
    }
    popc::popef::setCopies(*e.exchanges[0], copies);
    w.exe("copies_many_overlap_check", e, 0, "expected.npz", "--timeout 20");
  }

  // --- absurd sizes --------------------------------------------------------
  {
    auto e = sample();
    e.tensors[2]->shape = {int64_t(1) << 60}; // 2^62 bytes of float32
    w.exe("tensor_2pow62_bytes", e, 1, "tensors[2] 'sum': tensor size overflows (limit 1099511627776 bytes)");
  }
  {
    auto e = sample();
    e.tensors[2]->shape = {int64_t(1) << 31, int64_t(1) << 31, 4}; // product wraps to 0 in 64 bits
    w.exe("tensor_shape_product_wraps", e, 1, "tensor size overflows");
  }
  {
    auto e = sample();
    e.tensors[2]->shape = {-4};
    w.exe("tensor_negative_dim", e, 1, "shape dimension 0 is negative (-4)");
  }
  // Compressed files: the sample runs; a flipped frame byte, or a header
  // declaring a schedule larger than --max-memory (a zstd bomb: 600 MB of
  // zeros in a few KB), is refused before anything runs.
  {
    const std::vector<uint8_t> packed = popc::popef::compress(popc::popef::serialize(sample()), 9);
    w.bytes("compressed_sample", packed, 0, "expected.npz");
    auto flipped = packed;
    flipped.resize(flipped.size() - popc::popef::kTrailerBytes);
    flipped[64 + 8] ^= 0x5a;
    popc::popef::seal(flipped);
    w.bytes("compressed_corrupt_frame", flipped, 1, "corrupt compressed popef file");
    w.bytes("compressed_bomb", zstdBomb(packed, 600u << 20), 1, "once decompressed, more than --max-memory",
            "--max-memory 100M");
  }
  // A 1 TiB tensor, correctly mapped over 65536 tiles of 16 MiB: structurally
  // valid, refused by the memory budget before anything is allocated.
  {
    auto e = sample();
    e.target->num_ipus = 2;
    e.target->tiles_per_ipu = 32768;
    e.target->bytes_per_tile = 16u << 20;
    e.tile_bytes_used.clear();
    auto huge = popc::test::sampleTensor("huge", fb::TensorRole::Intermediate, {});
    huge->shape = {int64_t(1) << 38};
    for (uint32_t t = 0; t < 65536; ++t)
      huge->mapping.push_back(fb::TileInterval(uint64_t(t) << 24, 16u << 20, t, 0));
    // The sample's own tensors move up to stay clear of it.
    for (auto &ten : e.tensors)
      for (auto &iv : ten->mapping)
        iv = fb::TileInterval(iv.begin(), iv.bytes(), iv.tile() + 4, iv.offset());
    for (auto &v : e.compute_sets[0]->vertices)
      v = fb::Vertex(v.type(), v.tile() + 4, v.fields_begin());
    for (auto &p : e.exchanges[0]->pieces)
      p = fb::Piece(p.src_tile() + 4, p.src_offset(), p.bytes(), p.repeat(), p.src_stride(), p.dst_stride());
    for (auto &at : e.exchanges[0]->placements)
      at = fb::Placement(at.dst_tile() + 4, at.dst_offset(), at.first_piece(), at.pieces());
    e.tensors.push_back(std::move(huge));
    w.exe("tensor_1TiB_over_budget", e, 1, "more than --max-memory");
  }
  {
    auto e = sample();
    e.target->num_ipus = 1 << 11;
    e.target->tiles_per_ipu = 1 << 10;
    w.exe("target_too_many_tiles", e, 1, "2048 IPUs x 1024 tiles = 2097152 tiles exceeds the limit of 1048576");
  }
  {
    auto e = sample();
    e.target->bytes_per_tile = 0xFFFFFFFFu;
    w.exe("target_huge_tiles", e, 1, "bytes_per_tile 4294967295 exceeds the limit of 16777216");
  }
  {
    auto e = sample();
    e.target->tiles_per_ipu = 0;
    w.exe("target_zero_tiles", e, 1, "tiles_per_ipu must be nonzero");
  }
  {
    auto e = sample();
    e.vertex_types[0]->cycles = ~uint64_t(0);
    w.exe("vertex_cycles_absurd", e, 1, "cycles 18446744073709551615 exceeds the limit");
  }
  w.bytes("vertices_1e9_declared", patchVertexCount(popc::popef::serialize(sample()), 1000000000u), 1,
          "corrupt popef file (flatbuffer verification failed)");

  // --- programs --------------------------------------------------------------
  {
    auto e = sample();
    e.main->children.push_back(repeat(0xFFFFFFFFu, sampleProgram(fb::ProgramKind::Sync)));
    w.exe("repeat_2pow32_minus_1", e, 1, "Repeat count 4294967295 exceeds the limit of 1073741824");
  }
  {
    // 2^30 iterations of 2^30 iterations of an exchange: valid, endless in
    // practice; --timeout stops it between steps.
    auto e = sample();
    auto inner = repeat(1u << 30, sampleProgram(fb::ProgramKind::Exchange, 0));
    e.main->children.insert(e.main->children.begin() + 3, repeat(1u << 30, std::move(inner)));
    w.exe("repeat_2pow60_steps", e, 3, "stopped by --timeout 1 s after 0 complete iteration(s)", "--timeout 1");
  }
  {
    // Calls fanning out: f_i = {Call f_{i+1}; Call f_{i+1}}, 30 levels = 2^30
    // executions of the leaf from a file of a few KB.
    auto e = sample();
    const int levels = 30;
    for (int i = 0; i < levels; ++i) {
      auto f = sampleProgram(fb::ProgramKind::Sequence);
      if (i + 1 < levels) {
        f->children.push_back(sampleProgram(fb::ProgramKind::Call, i + 1));
        f->children.push_back(sampleProgram(fb::ProgramKind::Call, i + 1));
      } else {
        f->children.push_back(sampleProgram(fb::ProgramKind::Execute, 0));
      }
      e.functions.push_back(std::move(f));
    }
    e.main->children.insert(e.main->children.begin() + 1, sampleProgram(fb::ProgramKind::Call, 0));
    w.exe("call_fanout_2pow30", e, 3, "stopped by --timeout", "--timeout 1");
  }
  {
    auto e = sample();
    e.functions.push_back(sampleProgram(fb::ProgramKind::Call, 0));
    e.main->children.push_back(sampleProgram(fb::ProgramKind::Call, 0));
    w.exe("call_self", e, 1, "functions[0]: calls itself (recursion through Call)");
  }
  {
    auto e = sample();
    e.functions.push_back(sampleProgram(fb::ProgramKind::Call, 1));
    e.functions.push_back(sampleProgram(fb::ProgramKind::Call, 0));
    w.exe("call_mutual_recursion", e, 1, "calls itself (recursion through Call)");
  }
  {
    auto e = sample();
    e.functions.push_back(sampleProgram(fb::ProgramKind::Call, 0)); // never called from main
    w.exe("call_self_uncalled", e, 1, "functions[0]: calls itself");
  }
  {
    auto e = sample();
    e.main->children.push_back(sampleProgram(fb::ProgramKind::Call, 3));
    w.exe("call_out_of_range", e, 1, "Call index 3 out of range (0 functions)");
  }
  {
    // RepeatWhileTrue on the constant b (nonzero): a data-dependent loop that
    // never ends; --timeout stops it between steps.
    auto e = sample();
    auto loop = sampleProgram(fb::ProgramKind::RepeatWhileTrue);
    loop->tensor = 1;
    loop->children.push_back(sampleProgram(fb::ProgramKind::Sequence));
    loop->children.push_back(sampleProgram(fb::ProgramKind::Sync));
    e.main->children.insert(e.main->children.begin() + 1, std::move(loop));
    w.exe("repeat_while_true_forever", e, 3, "stopped by --timeout 1 s", "--timeout 1");
  }
  {
    // PrintTensor of a verified empty tensor whose first dimension is 2^38.
    auto e = sample();
    auto empty = popc::test::sampleTensor("empty", fb::TensorRole::Intermediate, {});
    empty->shape = {int64_t(1) << 38, 0};
    e.tensors.push_back(std::move(empty));
    auto print = sampleProgram(fb::ProgramKind::PrintTensor);
    print->tensor = 4;
    print->name = "empty";
    e.main->children.push_back(std::move(print));
    w.exe("print_empty_tensor_2pow38_rows", e, 0, "expected.npz", "--timeout 20");
  }
  w.bytes("program_depth_100", deepProgram(sample(), 100), 1, "children[0]: program tree deeper than 64");
  w.bytes("program_depth_100000", deepProgram(sample(), 100000), 1,
          "corrupt popef file (flatbuffer verification failed)");
  {
    auto e = sample();
    e.main->children.push_back(sampleProgram(fb::ProgramKind::Execute, 5));
    w.exe("execute_out_of_range", e, 1, "Execute index 5 out of range (1 compute sets)");
  }
  {
    auto e = sample();
    e.main->children.push_back(sampleProgram(static_cast<fb::ProgramKind>(200)));
    w.exe("program_kind_invalid", e, 1, "invalid program kind code 200");
  }

  // --- file level ------------------------------------------------------------
  {
    auto b = popc::popef::serialize(sample());
    auto cut = std::vector<uint8_t>(b.begin(), b.begin() + b.size() / 2);
    w.bytes("truncated", cut, 1, "checksum mismatch: the file is truncated or corrupt");
    auto flipped = b;
    flipped[flipped.size() / 2] ^= 0x40;
    w.bytes("bit_flipped", flipped, 1, "checksum mismatch");
    w.bytes("empty_file", {}, 1, "not a popef file");
    std::string text = "#!/bin/sh\nrm -rf ~\n";
    w.bytes("shell_script", {text.begin(), text.end()}, 1, "not a popef file");
  }
  {
    auto e = sample();
    e.format_version = popc::popef::kFormatVersion + 1;
    w.exe("format_version_future", e, 1, "is not supported (this build reads versions");
  }
  {
    // Weights changed after sealing the constant's checksum, file trailer redone.
    auto b = popc::popef::serialize(sample());
    const fb::Executable *root = fb::GetExecutable(b.data());
    size_t at = root->constants()->Get(0)->data()->data() - b.data();
    b[at] ^= 1;
    popc::popef::seal(b);
    w.bytes("constant_checksum_mismatch", b, 1, "constants[0]: data checksum mismatch");
  }
  {
    // A constant in the data segment (format 4) whose range runs past the end of the file.
    auto e = sample();
    std::vector<uint8_t> weights = std::move(e.constants[0]->data);
    e.constants[0]->data.clear();
    std::vector<std::span<const uint8_t>> segment{weights};
    auto b = popc::popef::serialize(e, 0, segment);
    fb::GetMutableExecutable(b.data())->mutable_constants()->GetMutableObject(0)->mutate_size(uint64_t(1) << 40);
    popc::popef::seal(b);
    w.bytes("constant_segment_outside_file", b, 1, "constants[0]: data segment bytes");
  }
  {
    auto b = popc::popef::serialize(sample());
    const fb::Executable *root = fb::GetExecutable(b.data());
    size_t at = root->code()->Get(0)->bitcode()->data() - b.data();
    b[at + 40] ^= 1;
    popc::popef::seal(b);
    w.bytes("bitcode_checksum_mismatch", b, 1, "code[0]: bitcode checksum mismatch");
  }
  std::printf("wrote %s\n", (w.dir / "cases.tsv").c_str());
  return 0;
}
