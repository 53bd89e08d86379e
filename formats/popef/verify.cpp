// Semantic checks of a popef executable, run after the flatbuffers Verifier.
// After these pass, a runner may index every array and touch every byte range
// named in the file without further bounds checks.
#include "formats/popef/popef.h"

#include "support/dtype.h"
#include "support/error.h"
#include "support/parallel.h"
#include "support/version.h"

#include <algorithm>
#include <concepts>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <type_traits>

namespace popc::popef {

namespace fb = ::popef::fb;

namespace {


std::string str(const flatbuffers::String *s) { return s ? s->str() : std::string(); }

class Checker {
public:
  Checker(const fb::Executable &exe, const Segment &segment, const std::string &label, unsigned threads)
      : exe_(exe), segment_(segment), label_(label), threads_(std::max(1u, threads)) {}

  void run() {
    checkHeader();
    checkTarget();
    checkTileBytesUsed(); // before the ranges, which it bounds
    checkChecksums(); // first: it also checks the constants' segment ranges, which checkTensors reads
    checkTensors();
    checkVertexTypes();
    checkComputeSets();
    checkExchanges();
    checkStreams();
    checkPrograms();
    checkMetadata();
    checkRunChecks();
  }

private:
  // Where an error is: a string, or a callable that makes one. Per-element
  // checks pass callables, so a file with millions of elements formats a
  // location only when something is wrong with it.
  static const std::string &text(const std::string &w) { return w; }
  static std::string text(const char *w) { return w; }
  template <typename F>
    requires std::invocable<const F &>
  static std::string text(const F &w) {
    return w();
  }

  template <typename W, typename... Args>
  [[noreturn]] void bad(const W &where, fmt::format_string<Args...> format, Args &&...args) {
    fail("{}: {}: {}", label_, text(where), fmt::format(format, std::forward<Args>(args)...));
  }

  void checkHeader() {
    if (exe_.format_version() < kMinFormatVersion || exe_.format_version() > kFormatVersion)
      fail("{}: format_version {} is not supported (this build reads versions {} to {}, {}): "
           "recompile the model with this popc",
           label_, exe_.format_version(), kMinFormatVersion, kFormatVersion, compilerVersion());
  }

  void checkTarget() {
    const fb::Target *t = exe_.target();
    if (!t)
      bad("target", "missing");
    auto nonzero = [&](const char *name, uint64_t v) {
      if (v == 0)
        bad("target", "{} must be nonzero", name);
    };
    nonzero("num_ipus", t->num_ipus());
    nonzero("tiles_per_ipu", t->tiles_per_ipu());
    nonzero("bytes_per_tile", t->bytes_per_tile());
    nonzero("workers_per_tile", t->workers_per_tile());
    nonzero("clock_hz", t->clock_hz());
    nonzero("exchange_bytes_per_cycle", t->exchange_bytes_per_cycle());
    nonzero("inter_ipu_bytes_per_cycle", t->inter_ipu_bytes_per_cycle());
    nonzero("host_bytes_per_cycle", t->host_bytes_per_cycle());
    uint64_t tiles = uint64_t(t->num_ipus()) * t->tiles_per_ipu();
    if (tiles > kMaxTiles)
      bad("target", "{} IPUs x {} tiles = {} tiles exceeds the limit of {}", t->num_ipus(),
          t->tiles_per_ipu(), tiles, kMaxTiles);
    if (t->bytes_per_tile() > kMaxBytesPerTile)
      bad("target", "bytes_per_tile {} exceeds the limit of {}", t->bytes_per_tile(),
          kMaxBytesPerTile);
    if (t->workers_per_tile() > kMaxWorkersPerTile)
      bad("target", "workers_per_tile {} exceeds the limit of {}", t->workers_per_tile(),
          kMaxWorkersPerTile);
    numTiles_ = static_cast<uint32_t>(tiles);
    bytesPerTile_ = t->bytes_per_tile();
    // Replicas multiply the runner's arena (docs/multi-ipu.md).
    if (t->replication_factor() == 0 || tiles * t->replication_factor() > kMaxTiles)
      bad("target", "replication_factor {} x {} tiles per replica must be between 1 and {} tiles",
          t->replication_factor(), tiles, kMaxTiles);
  }

  template <typename W> void checkTile(const W &where, const char *what, uint32_t tile) {
    if (tile >= numTiles_)
      bad(where, "{} {} out of range (target has {} tiles)", what, tile, numTiles_);
  }

  // A range on `tile`: inside the bytes it may use (tileMemoryBytes), which
  // is all the host memory the runner gives it.
  template <typename W, typename What>
  void checkRange(const W &where, const What &what, uint32_t tile, uint64_t offset, uint64_t bytes) {
    checkExtent(where, what, offset, bytes);
    if (tileBytesUsed_ && offset + bytes > tileBytesUsed_->Get(tile))
      bad(where, "{} range [{}, {}) on tile {} exceeds the tile's planned memory (tile_bytes_used[{}] = {})",
          text(what), offset, offset + bytes, tile, tile, tileBytesUsed_->Get(tile));
  }
  // A range on no tile in particular: inside bytes_per_tile.
  template <typename W, typename What> void checkExtent(const W &where, const What &what, uint64_t offset, uint64_t bytes) {
    if (offset + bytes > bytesPerTile_)
      bad(where, "{} range [{}, {}) exceeds tile memory (bytes_per_tile {})", text(what), offset, offset + bytes,
          bytesPerTile_);
  }

  // The flatbuffers 2.0 Verifier checks only the 4-byte alignment of a vector's
  // length, not that of its elements: a crafted file can put 8-byte elements (int64
  // shapes, TileInterval) at an address 4 mod 8, and reading them is undefined
  // behaviour. FlatBufferBuilder always aligns them, so only corrupt files fail.
  template <typename W, typename T>
  void checkAligned(const W &where, const char *field, const flatbuffers::Vector<T> *v) {
    using Element = std::remove_cv_t<std::remove_pointer_t<T>>;
    if (v && reinterpret_cast<uintptr_t>(v->Data()) % alignof(Element) != 0)
      bad(where, "{} is misaligned (its elements need {}-byte alignment): corrupt file, "
                 "recompile the model",
          field, alignof(Element));
  }

  template <typename W> void checkDType(const W &where, fb::DType d) {
    if (static_cast<uint8_t>(d) > static_cast<uint8_t>(fb::DType::MAX))
      bad(where, "invalid dtype code {}", static_cast<int>(d));
  }

  // Byte size of dtype x shape; fails on negative dims or overflow.
  template <typename W>
  uint64_t shapeBytes(const W &where, fb::DType d, const flatbuffers::Vector<int64_t> *shape) {
    checkDType(where, d);
    uint64_t n = dtypeSize(static_cast<DType>(d));
    for (uint32_t i = 0; i < len(shape); ++i) {
      int64_t dim = shape->Get(i);
      if (dim < 0)
        bad(where, "shape dimension {} is negative ({})", i, dim);
      if (dim != 0 && n > kMaxTensorBytes / static_cast<uint64_t>(dim))
        bad(where, "tensor size overflows (limit {} bytes)", kMaxTensorBytes);
      n *= static_cast<uint64_t>(dim);
    }
    return n;
  }

  // Intervals sorted by begin that, with their cycles' repetitions, cover the
  // tensor exactly once; each lane's whole block inside its tile. Linear in
  // the stored intervals: a cycle's repetitions are checked by arithmetic.
  template <typename W> void checkMapping(const W &where, const fb::Tensor &t, uint64_t bytes) {
    const uint32_t n = len(t.mapping()), nc = len(t.mapping_cycles());
    uint64_t covered = 0;
    uint32_t c = 0;
    for (uint32_t j = 0; j < n;) {
      uint32_t lanes = 1;
      uint64_t times = 1;
      if (c < nc) {
        const fb::IntervalCycle *cycle = t.mapping_cycles()->Get(c);
        auto w = [&] { return fmt::format("{}.mapping_cycles[{}]", text(where), c); };
        if (cycle->first() < j)
          bad(w, "first {} is inside the previous cycle or before it (cycles must be sorted by first and disjoint)",
              cycle->first());
        if (cycle->first() == j) {
          if (cycle->lanes() == 0 || uint64_t(j) + cycle->lanes() > n)
            bad(w, "lanes [{}, {}) out of range ({} intervals)", j, uint64_t(j) + cycle->lanes(), n);
          lanes = cycle->lanes();
          times = uint64_t(cycle->repeat()) + 1;
          ++c;
        }
      }
      uint64_t period = 0;
      for (uint32_t k = j; k < j + lanes; ++k) {
        const fb::TileInterval *iv = t.mapping()->Get(k);
        auto w = [&] { return fmt::format("{}.mapping[{}]", text(where), k); };
        checkTile(w, "tile", iv->tile());
        if (times > 1 && iv->bytes() == 0)
          bad(w, "has no bytes but repeats in a cycle");
        checkRange(w, "interval", iv->tile(), iv->offset(), uint64_t(iv->bytes()) * times);
        if (iv->begin() != covered + period)
          bad(w, "begins at tensor byte {}, expected {} (intervals must be sorted by begin and "
                 "cover the tensor exactly once)",
              iv->begin(), covered + period);
        period += iv->bytes();
      }
      if (period > bytes - std::min(bytes, covered) || times > (bytes - covered) / std::max<uint64_t>(period, 1))
        bad(where, "mapping covers more than the tensor's {} bytes", bytes);
      covered += period * times;
      j += lanes;
    }
    if (c != nc) {
      const uint32_t first = t.mapping_cycles()->Get(c)->first();
      auto w = [&] { return fmt::format("{}.mapping_cycles[{}]", text(where), c); };
      if (first < n)
        bad(w, "first {} is inside the previous cycle or before it (cycles must be sorted by first and disjoint)",
            first);
      bad(w, "first {} out of range ({} intervals)", first, n);
    }
    if (covered != bytes)
      bad(where, "mapping covers {} bytes but the tensor has {} bytes", covered, bytes);
  }

  void checkTensors() {
    uint32_t n = len(exe_.tensors());
    for (uint32_t i = 0; i < n; ++i) {
      const fb::Tensor *t = exe_.tensors()->Get(i);
      auto where = [&] { return fmt::format("tensors[{}] '{}'", i, str(t->name())); };
      if (static_cast<uint8_t>(t->role()) > static_cast<uint8_t>(fb::TensorRole::MAX))
        bad(where, "invalid role code {}", static_cast<int>(t->role()));
      checkAligned(where, "shape", t->shape());
      checkAligned(where, "mapping", t->mapping());
      uint64_t bytes = shapeBytes(where, t->dtype(), t->shape());
      checkMapping(where, *t, bytes);
      int32_t c = t->constant();
      if (c < -1 || c >= static_cast<int64_t>(len(exe_.constants())))
        bad(where, "constant index {} out of range ({} constants)", c, len(exe_.constants()));
      if (c >= 0) {
        uint64_t have = constantBytes(*exe_.constants()->Get(c), segment_).size();
        if (have != bytes)
          bad(where, "constant {} holds {} bytes but the tensor has {} bytes", c, have, bytes);
      } else if (t->role() == fb::TensorRole::Constant && !t->filled_at_load()) {
        bad(where, "role Constant but no constant data");
      }
      if (t->filled_at_load() && (c >= 0 || t->role() != fb::TensorRole::Constant))
        bad(where, "filled_at_load is only for a Constant without data of its own");
    }
  }

  // Corrupt bitcode must never reach LLVM's reader, which is not hardened
  // against malformed input; corrupt weights would silently change results.
  void checkChecksums() {
    for (uint32_t i = 0; i < len(exe_.code()); ++i) {
      const fb::CodeModule *m = exe_.code()->Get(i);
      if (len(m->bitcode()) == 0)
        bad(fmt::format("code[{}]", i), "empty bitcode");
      if (checksum({m->bitcode()->data(), m->bitcode()->size()}) != m->xxh64())
        bad(fmt::format("code[{}]", i), "bitcode checksum mismatch: the file is corrupt; recompile the model");
    }
    // The weights are most of a file: hashed on every thread, each constant
    // once its range is known to be inside the file; the first failing
    // constant is the one reported, as a sequential loop would.
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < len(exe_.constants()); ++i)
      bytes += exe_.constants()->Get(i)->size();
    parallelFor(
        len(exe_.constants()),
        [&](size_t i) {
          const fb::ConstantData *c = exe_.constants()->Get(uint32_t(i));
          auto where = [i] { return fmt::format("constants[{}]", i); };
          if (c->size() && len(c->data()))
            bad(where, "has both inline data and {} bytes in the data segment", c->size());
          if (c->size() && (c->offset() % 64 != 0 || !segment_.contains(c->offset(), c->size())))
            bad(where, "data segment bytes [{}, {}) are not a 64-byte aligned range inside the file (its data segment: bytes {} to {})",
                c->offset(), c->offset() + c->size(), segment_.start, segment_.start + segment_.bytes.size());
          if (checksum(constantBytes(*c, segment_)) != c->xxh64())
            bad(where, "data checksum mismatch: the file is corrupt; recompile the model");
        },
        bytes < (8u << 20) ? 1 : threads_);
  }

  void checkVertexTypes() {
    for (uint32_t i = 0; i < len(exe_.vertex_types()); ++i) {
      const fb::VertexType *vt = exe_.vertex_types()->Get(i);
      std::string where = fmt::format("vertex_types[{}] '{}'", i, str(vt->name()));
      if (vt->module_() >= len(exe_.code()))
        bad(where, "module {} out of range ({} code modules)", vt->module_(), len(exe_.code()));
      if (str(vt->symbol()).empty())
        bad(where, "empty symbol");
      if (vt->cycles() > kMaxVertexCycles)
        bad(where, "cycles {} exceeds the limit of {}", vt->cycles(), kMaxVertexCycles);
      for (uint32_t f = 0; f < len(vt->fields()); ++f) {
        const fb::FieldDecl *fd = vt->fields()->Get(f);
        if (static_cast<uint8_t>(fd->access()) > static_cast<uint8_t>(fb::FieldAccess::MAX))
          bad(where, "field {} has invalid access code {}", f, static_cast<int>(fd->access()));
        if (fd->bytes() > bytesPerTile_)
          bad(where, "field {} has {} bytes, more than bytes_per_tile {}", f, fd->bytes(),
              bytesPerTile_);
        if (fd->access() == fb::FieldAccess::Immediate && exe_.format_version() < 6)
          bad(where, "field {} is an immediate, which format_version {} does not have (6 added them)", f,
              exe_.format_version());
        if (fd->access() == fb::FieldAccess::Immediate && fd->bytes() != 0)
          bad(where, "field {} is an immediate (a number, not memory) but declares {} bytes; it must declare 0", f,
              fd->bytes());
      }
    }
  }

  void checkComputeSets() {
    for (uint32_t i = 0; i < len(exe_.compute_sets()); ++i) {
      const fb::ComputeSet *cs = exe_.compute_sets()->Get(i);
      uint64_t nOffsets = len(cs->field_offsets());
      for (uint32_t j = 0; j < len(cs->vertices()); ++j) {
        const fb::Vertex *v = cs->vertices()->Get(j);
        auto where = [&] { return fmt::format("compute_sets[{}].vertices[{}]", i, j); };
        if (v->type() >= len(exe_.vertex_types()))
          bad(where, "vertex type {} out of range ({} vertex types)", v->type(),
              len(exe_.vertex_types()));
        checkTile(where, "tile", v->tile());
        const fb::VertexType *vt = exe_.vertex_types()->Get(v->type());
        uint32_t nf = len(vt->fields());
        if (uint64_t(v->fields_begin()) + nf > nOffsets)
          bad(where, "fields [{}, {}) exceed field_offsets size {}", v->fields_begin(),
              uint64_t(v->fields_begin()) + nf, nOffsets);
        for (uint32_t f = 0; f < nf; ++f)
          if (!popef::isImmediate(*vt->fields()->Get(f)))
            checkRange(where, [f] { return fmt::format("field {}", f); }, v->tile(),
                       cs->field_offsets()->Get(v->fields_begin() + f), vt->fields()->Get(f)->bytes());
      }
      checkVertexRepeats(i, *cs);
    }
  }

  // A repeated vertex: its last repetition's fields inside tile memory too
  // (offsets only grow with the strides), checked without expanding.
  void checkVertexRepeats(uint32_t i, const fb::ComputeSet &cs) {
    const uint32_t nr = len(cs.vertex_repeats()), ns = len(cs.field_strides());
    for (uint32_t k = 0; k < nr; ++k) {
      const fb::VertexRepeat *r = cs.vertex_repeats()->Get(k);
      auto where = [&] { return fmt::format("compute_sets[{}].vertex_repeats[{}]", i, k); };
      if (r->vertex() >= len(cs.vertices()) || (k > 0 && r->vertex() <= cs.vertex_repeats()->Get(k - 1)->vertex()))
        bad(where, "vertex {} out of range or out of order ({} vertices; repeats are sorted by vertex, distinct)",
            r->vertex(), len(cs.vertices()));
      if (r->repeat() >= bytesPerTile_)
        bad(where, "repeat {} exceeds the limit of bytes_per_tile {}", r->repeat(), bytesPerTile_);
      const fb::Vertex *v = cs.vertices()->Get(r->vertex());
      const fb::VertexType *vt = exe_.vertex_types()->Get(v->type());
      const uint32_t nf = len(vt->fields());
      if (uint64_t(r->strides_begin()) + nf > ns)
        bad(where, "strides [{}, {}) exceed field_strides size {}", r->strides_begin(),
            uint64_t(r->strides_begin()) + nf, ns);
      for (uint32_t f = 0; f < nf; ++f)
        if (!popef::isImmediate(*vt->fields()->Get(f)))
          checkRange(where, [f] { return fmt::format("field {} of the last repetition", f); }, v->tile(),
                     cs.field_offsets()->Get(v->fields_begin() + f) +
                         uint64_t(r->repeat()) * cs.field_strides()->Get(r->strides_begin() + f),
                     vt->fields()->Get(f)->bytes());
    }
  }

  // Steps are independent: checked on `threads_` threads. The error reported
  // is the first step's that fails, as a sequential check would report.
  void checkExchanges() {
    const uint32_t steps = len(exe_.exchanges());
    uint64_t records = 0;
    for (uint32_t i = 0; i < steps; ++i)
      records += len(exe_.exchanges()->Get(i)->pieces()) + len(exe_.exchanges()->Get(i)->placements());
    parallelFor(steps, [&](size_t i) { checkExchange(uint32_t(i)); }, records < (1u << 16) ? 1 : threads_);
  }

  // A step's pieces, then its placements: every range inside its tile. The
  // checks are linear in pieces and placements, not in the copies they make.
  void checkExchange(uint32_t i) {
    const fb::ExchangeStep *ex = exe_.exchanges()->Get(i);
    const uint32_t replicas = std::max(1u, exe_.target()->replication_factor());
    if (ex->from_replica() < -1 || ex->from_replica() >= int32_t(replicas))
      bad(fmt::format("exchanges[{}]", i), "from_replica {} is not a replica (replication factor {})",
          ex->from_replica(), replicas);
    const uint32_t np = len(ex->pieces()), nl = len(ex->placements());
    if ((np == 0) != (nl == 0))
      bad(fmt::format("exchanges[{}]", i), "{} pieces but {} placements: both or neither must be present", np, nl);
    StepExtents s;
    s.gappedBefore.assign(size_t(np) + 1, 0);
    for (uint32_t k = 0; k < np; ++k) {
      const fb::Piece *p = ex->pieces()->Get(k);
      auto where = [&] { return fmt::format("exchanges[{}].pieces[{}]", i, k); };
      checkTile(where, "src_tile", p->src_tile());
      if (p->bytes() == 0)
        bad(where, "bytes is 0 (a piece moves at least one byte)");
      if (p->repeat() && p->dst_stride() < p->bytes())
        bad(where, "dst_stride {} is less than bytes {}: its {} copies would overlap", p->dst_stride(), p->bytes(),
            uint64_t(p->repeat()) + 1);
      checkRange(where, "source", p->src_tile(), p->src_offset(), pieceSrcEnd(*p) - p->src_offset());
      checkExtent(where, "extent", 0, pieceExtent(*p));
      s.gappedBefore[k + 1] = s.gappedBefore[k] + (p->repeat() > 0 && p->dst_stride() > p->bytes());
    }
    s.extentBefore = pieceExtentsBefore(*ex); // each extent checked above: the sums cannot wrap
    for (uint32_t j = 0; j < nl; ++j) {
      const fb::Placement *at = ex->placements()->Get(j);
      auto where = [&] { return fmt::format("exchanges[{}].placements[{}]", i, j); };
      checkTile(where, "dst_tile", at->dst_tile());
      if (at->pieces() == 0 || uint64_t(at->first_piece()) + at->pieces() > np)
        bad(where, "pieces [{}, {}) out of range ({} pieces)", at->first_piece(),
            uint64_t(at->first_piece()) + at->pieces(), np);
      checkRange(where, "destination", at->dst_tile(), at->dst_offset(), s.extent(*at));
    }
    checkCopyOverlaps(i, ex, s);
  }

  // Where a step's placements land, from prefix sums over its pieces.
  struct StepExtents {
    std::vector<uint64_t> extentBefore; // bytes spanned by pieces [0, k)
    std::vector<uint32_t> gappedBefore; // strided pieces with gaps among [0, k)
    uint64_t extent(const fb::Placement &at) const { return placementSum(extentBefore, at); }
    // Its pieces cover its whole extent: another range that meets it overlaps it.
    bool dense(const fb::Placement &at) const {
      return gappedBefore[at.first_piece() + at.pieces()] == gappedBefore[at.first_piece()];
    }
  };

  // Copies of one step run in parallel: destinations must not overlap each
  // other, and no source may read bytes another copy of the step writes. A
  // placement is first judged by its extent (first to last byte, O(n log n)
  // over placements): disjoint extents cannot overlap. Only on a tile where
  // extents do meet (interleaved strided pieces, as a gather whose rows come
  // from two tiles makes) are the placement's copies expanded and checked one
  // by one; a tile holds at most bytes_per_tile non-overlapping copies, which
  // bounds that work. Sources are checked per piece: a piece reads the same
  // bytes whichever placements use it.
  struct Range {
    uint32_t begin, end, placement;
  };

  void checkCopyOverlaps(uint32_t step, const fb::ExchangeStep *ex, const StepExtents &s) {
    const uint32_t nl = len(ex->placements()), np = len(ex->pieces());
    if (!nl)
      return;
    // The arrays of structs they are (not a table lookup each).
    const fb::Placement *placements = reinterpret_cast<const fb::Placement *>(ex->placements()->Data());
    const fb::Piece *pieces = reinterpret_cast<const fb::Piece *>(ex->pieces()->Data());
    auto where = [&](uint32_t k) { return fmt::format("exchanges[{}].placements[{}]", step, k); };
    std::vector<uint32_t> order(nl);
    std::iota(order.begin(), order.end(), 0u);
    auto key = [&](uint32_t k) { return std::pair(placements[k].dst_tile(), placements[k].dst_offset()); };
    auto byKey = [&](uint32_t a, uint32_t b) { return key(a) < key(b); };
    if (!std::is_sorted(order.begin(), order.end(), byKey)) // writers sort by destination (popef.fbs)
      std::stable_sort(order.begin(), order.end(), byKey);

    // Each tile's placements: order[firstOnTile[t], firstOnTile[t + 1]).
    std::vector<uint32_t> firstOnTile(size_t(numTiles_) + 1, 0);
    for (uint32_t k : order)
      firstOnTile[placements[k].dst_tile() + 1]++;
    std::partial_sum(firstOnTile.begin(), firstOnTile.end(), firstOnTile.begin());
    std::vector<uint32_t> dstBegin(order.size());
    std::vector<uint64_t> dstEnd(order.size());
    for (size_t k = 0; k < order.size(); ++k) {
      dstBegin[k] = placements[order[k]].dst_offset();
      dstEnd[k] = dstBegin[k] + s.extent(placements[order[k]]);
    }

    // Every destination copy on `tile`, sorted and checked for overlaps (built on demand).
    std::map<uint32_t, std::vector<Range>> exact;
    std::vector<bool> expanded(numTiles_); // tiles in `exact`
    auto exactOn = [&](uint32_t tile) -> const std::vector<Range> & {
      auto [it, added] = exact.try_emplace(tile);
      if (!added)
        return it->second;
      expanded[tile] = true;
      std::vector<Range> &ranges = it->second;
      for (uint32_t at = firstOnTile[tile]; at < firstOnTile[tile + 1]; ++at) {
        const uint32_t r = order[at];
        forEachCopyOf(placements[r], pieces, [&](const fb::Copy &c) {
          for (uint64_t i = 0; i < copyCount(c); ++i) {
            if (ranges.size() >= bytesPerTile_)
              bad(where(r), "destinations on tile {} overlap (more copies than the tile has bytes)", tile);
            const uint32_t b = uint32_t(c.dst_offset() + i * c.dst_stride());
            ranges.push_back({b, b + c.bytes(), r});
          }
        });
      }
      std::sort(ranges.begin(), ranges.end(), [](const Range &a, const Range &b) { return a.begin < b.begin; });
      for (size_t k = 1; k < ranges.size(); ++k)
        if (ranges[k - 1].end > ranges[k].begin)
          bad(where(ranges[k].placement), "destination overlaps placements[{}] on tile {}", ranges[k - 1].placement,
              tile);
      return ranges;
    };

    // Destinations: disjoint extents settle a tile; meeting extents expand it.
    for (size_t k = 1; k < order.size(); ++k) {
      const fb::Placement &p = placements[order[k - 1]], &c = placements[order[k]];
      if (p.dst_tile() == c.dst_tile() && dstEnd[k - 1] > dstBegin[k]) {
        if (s.dense(p) && s.dense(c))
          bad(where(order[k]), "destination overlaps placements[{}] on tile {}", order[k - 1], c.dst_tile());
        exactOn(c.dst_tile());
      }
    }

    // Sources: against the destination extents on the source tile, exactly
    // where an extent is met (or the tile was expanded above).
    for (uint32_t j = 0; j < np; ++j) {
      const fb::Piece &p = pieces[j];
      auto source = [&] { return fmt::format("exchanges[{}].pieces[{}]", step, j); };
      const uint32_t lo = firstOnTile[p.src_tile()], hi = firstOnTile[p.src_tile() + 1];
      if (lo == hi)
        continue; // nothing is written on the source's tile
      if (!expanded[p.src_tile()]) {
        // The destination extents next to src_offset: the last one starting at
        // or before it, and the first one starting after it.
        const uint32_t at = uint32_t(std::upper_bound(dstBegin.begin() + lo, dstBegin.begin() + hi, p.src_offset()) -
                                     dstBegin.begin());
        const uint64_t srcEnd = pieceSrcEnd(p);
        auto meets = [&](uint32_t k) { return dstBegin[k] < srcEnd && dstEnd[k] > p.src_offset(); };
        std::optional<uint32_t> met;
        for (uint32_t near : {at == lo ? hi : at - 1, at})
          if (!met && near != hi && meets(near))
            met = order[near];
        if (!met)
          continue;
        if (p.repeat() == 0 && s.dense(placements[*met]))
          bad(source, "source overlaps the destination of placements[{}] in the same step", *met);
      }
      const std::vector<Range> &ranges = exactOn(p.src_tile());
      for (uint64_t i = 0; i <= p.repeat(); ++i) {
        const uint64_t b = p.src_offset() + i * p.src_stride(), e = b + p.bytes();
        auto it = std::upper_bound(ranges.begin(), ranges.end(), b,
                                   [](uint64_t v, const Range &r) { return v < r.begin; });
        if (it != ranges.begin() && std::prev(it)->end > b)
          bad(source, "source overlaps the destination of placements[{}] in the same step", std::prev(it)->placement);
        if (it != ranges.end() && it->begin < e)
          bad(source, "source overlaps the destination of placements[{}] in the same step", it->placement);
        if (p.src_stride() == 0)
          break; // every copy reads the same bytes
      }
    }
  }

  void checkStreams() {
    for (uint32_t i = 0; i < len(exe_.streams()); ++i) {
      const fb::HostStream *s = exe_.streams()->Get(i);
      std::string where = fmt::format("streams[{}] '{}'", i, str(s->name()));
      if (s->tensor() >= len(exe_.tensors()))
        bad(where, "tensor {} out of range ({} tensors)", s->tensor(), len(exe_.tensors()));
      if (static_cast<uint8_t>(s->direction()) > static_cast<uint8_t>(fb::StreamDirection::MAX))
        bad(where, "invalid direction code {}", static_cast<int>(s->direction()));
    }
  }

  // Depth-first over the program tree. Returns the deepest nesting reached,
  // counting the bodies of called functions.
  uint32_t checkProgram(const fb::Program *p, const std::string &where, uint32_t depth) {
    if (depth > kMaxProgramDepth)
      bad(where, "program tree deeper than {}", kMaxProgramDepth);
    uint32_t deepest = depth;
    auto need = [&](uint32_t count, const char *what) {
      if (p->index() >= count)
        bad(where, "{} index {} out of range ({} {})", fb::EnumNameProgramKind(p->kind()),
            p->index(), count, what);
    };
    switch (p->kind()) {
    case fb::ProgramKind::Sequence:
    case fb::ProgramKind::Repeat:
      if (p->kind() == fb::ProgramKind::Repeat && p->count() > kMaxRepeatCount)
        bad(where, "Repeat count {} exceeds the limit of {}", p->count(), kMaxRepeatCount);
      for (uint32_t i = 0; i < len(p->children()); ++i)
        deepest = std::max(deepest, checkProgram(p->children()->Get(i),
                                                 fmt::format("{}.children[{}]", where, i), depth + 1));
      return deepest;
    case fb::ProgramKind::Execute: need(len(exe_.compute_sets()), "compute sets"); break;
    case fb::ProgramKind::Exchange: need(len(exe_.exchanges()), "exchange steps"); break;
    case fb::ProgramKind::StreamCopy: need(len(exe_.streams()), "streams"); break;
    case fb::ProgramKind::Call:
      need(len(exe_.functions()), "functions");
      deepest = std::max(deepest, depth + checkFunction(p->index()));
      break;
    case fb::ProgramKind::Sync: break;
    case fb::ProgramKind::If:
    case fb::ProgramKind::RepeatWhileTrue:
    case fb::ProgramKind::Switch: {
      if (p->tensor() >= len(exe_.tensors()))
        bad(where, "{} tensor {} out of range ({} tensors)", fb::EnumNameProgramKind(p->kind()), p->tensor(),
            len(exe_.tensors()));
      const uint32_t want = p->kind() == fb::ProgramKind::Switch ? len(p->case_values()) + 1 : 2;
      if (len(p->children()) != want)
        bad(where, "{} needs {} children, has {}", fb::EnumNameProgramKind(p->kind()), want, len(p->children()));
      if (tensorBytes(*exe_.tensors()->Get(p->tensor())) == 0)
        bad(where, "{} reads empty tensor {}", fb::EnumNameProgramKind(p->kind()), p->tensor());
      for (uint32_t i = 0; i < len(p->children()); ++i)
        deepest = std::max(deepest, checkProgram(p->children()->Get(i),
                                                 fmt::format("{}.children[{}]", where, i), depth + 1));
      return deepest;
    }
    case fb::ProgramKind::PrintTensor:
      if (p->tensor() >= len(exe_.tensors()))
        bad(where, "PrintTensor tensor {} out of range ({} tensors)", p->tensor(), len(exe_.tensors()));
      break;
    default: bad(where, "invalid program kind code {}", static_cast<int>(p->kind()));
    }
    if (len(p->children()) != 0)
      bad(where, "{} must not have children (only Sequence, Repeat, If, RepeatWhileTrue and Switch do)",
          fb::EnumNameProgramKind(p->kind()));
    return deepest;
  }

  // Depth of function f's body including nested calls; detects call cycles.
  uint32_t checkFunction(uint32_t f) {
    if (fnState_[f] == 1)
      bad(fmt::format("functions[{}]", f), "calls itself (recursion through Call)");
    if (fnState_[f] == 2)
      return fnDepth_[f];
    fnState_[f] = 1;
    uint32_t d = checkProgram(exe_.functions()->Get(f), fmt::format("functions[{}]", f), 1);
    if (d > kMaxProgramDepth)
      bad(fmt::format("functions[{}]", f), "nesting through calls deeper than {}", kMaxProgramDepth);
    fnState_[f] = 2;
    fnDepth_[f] = d;
    return d;
  }

  void checkPrograms() {
    fnState_.assign(len(exe_.functions()), 0);
    fnDepth_.assign(len(exe_.functions()), 0);
    if (!exe_.main())
      bad("main", "missing");
    if (checkProgram(exe_.main(), "main", 1) > kMaxProgramDepth)
      bad("main", "nesting through calls deeper than {}", kMaxProgramDepth);
    for (uint32_t f = 0; f < len(exe_.functions()); ++f)
      checkFunction(f);
    checkLoadProgram();
  }

  // The load program is a Sequence of Exchange steps and nothing else: it only
  // lays constants out; it computes nothing and streams nothing.
  void checkLoadProgram() {
    const fb::Program *load = exe_.load();
    if (!load)
      return;
    if (load->kind() != fb::ProgramKind::Sequence)
      bad("load", "must be a Sequence, is {}", fb::EnumNameProgramKind(load->kind()));
    for (uint32_t i = 0; i < len(load->children()); ++i) {
      const fb::Program *c = load->children()->Get(i);
      const std::string where = fmt::format("load.children[{}]", i);
      if (c->kind() != fb::ProgramKind::Exchange || len(c->children()) != 0)
        bad(where, "must be an Exchange without children, is {}", fb::EnumNameProgramKind(c->kind()));
      if (c->index() >= len(exe_.exchanges()))
        bad(where, "Exchange index {} out of range ({} exchange steps)", c->index(), len(exe_.exchanges()));
    }
  }

  void checkIo(const flatbuffers::Vector<flatbuffers::Offset<fb::IoInfo>> *list, const char *kind,
               fb::StreamDirection dir) {
    std::set<std::string> names;
    for (uint32_t i = 0; i < len(list); ++i) {
      const fb::IoInfo *io = list->Get(i);
      std::string where = fmt::format("metadata.{}[{}] '{}'", kind, i, str(io->name()));
      if (str(io->name()).empty())
        bad(where, "empty name");
      if (!names.insert(str(io->name())).second)
        bad(where, "duplicate name");
      if (io->tensor() >= len(exe_.tensors()))
        bad(where, "tensor {} out of range ({} tensors)", io->tensor(), len(exe_.tensors()));
      if (io->stream() >= len(exe_.streams()))
        bad(where, "stream {} out of range ({} streams)", io->stream(), len(exe_.streams()));
      const fb::HostStream *s = exe_.streams()->Get(io->stream());
      if (s->tensor() != io->tensor())
        bad(where, "stream {} carries tensor {}, not tensor {}", io->stream(), s->tensor(), io->tensor());
      if (s->direction() != dir)
        bad(where, "stream {} has direction {}, expected {}", io->stream(),
            fb::EnumNameStreamDirection(s->direction()), fb::EnumNameStreamDirection(dir));
      const fb::Tensor *t = exe_.tensors()->Get(io->tensor());
      checkDType(where, io->dtype());
      checkAligned(where, "shape", io->shape());
      if (io->dtype() != t->dtype())
        bad(where, "dtype {} differs from tensor {} dtype {}", dtypeName(static_cast<DType>(io->dtype())),
            io->tensor(), dtypeName(static_cast<DType>(t->dtype())));
      bool same = len(io->shape()) == len(t->shape());
      for (uint32_t d = 0; same && d < len(io->shape()); ++d)
        same = io->shape()->Get(d) == t->shape()->Get(d);
      if (!same)
        bad(where, "shape differs from the shape of tensor {}", io->tensor());
      // A step's host array holds whole chunks of the tensor, at most 2^26 of them.
      if (len(io->host_shape())) {
        checkAligned(where, "host_shape", io->host_shape());
        uint64_t elems = 1, chunk = 1;
        for (uint32_t d = 0; d < len(io->shape()); ++d)
          chunk *= uint64_t(std::max<int64_t>(io->shape()->Get(d), 0));
        for (uint32_t d = 0; d < len(io->host_shape()); ++d) {
          const int64_t x = io->host_shape()->Get(d);
          if (x < 0 || x > (int64_t(1) << 26) || __builtin_mul_overflow(elems, uint64_t(x), &elems) ||
              elems / (chunk + 1) > (uint64_t(1) << 26))
            bad(where, "host_shape dimension {} is {}: not a step of whole tensors", d, x);
        }
        if (chunk && (elems == 0 || elems % chunk || elems / chunk > (uint64_t(1) << 26)))
          bad(where, "host_shape holds {} elements, not a whole number of {}-element tensors", elems, chunk);
      }
    }
  }

  void checkMetadata() {
    const fb::Metadata *m = exe_.metadata();
    if (!m)
      return;
    checkIo(m->inputs(), "inputs", fb::StreamDirection::HostToDevice);
    checkIo(m->outputs(), "outputs", fb::StreamDirection::DeviceToHost);
    checkVariables(m->variables());
  }

  // Variables: named device tensors with bytes of their own, read and written by the runner.
  void checkVariables(const flatbuffers::Vector<flatbuffers::Offset<fb::IoInfo>> *list) {
    std::set<std::string> names;
    for (uint32_t i = 0; i < len(list); ++i) {
      const fb::IoInfo *io = list->Get(i);
      const std::string where = fmt::format("metadata.variables[{}]", i);
      if (!io->name() || io->name()->size() == 0)
        bad(where, "no name");
      if (!names.insert(io->name()->str()).second)
        bad(where, "duplicate name");
      if (io->tensor() >= len(exe_.tensors()))
        bad(where, "tensor {} out of range ({} tensors)", io->tensor(), len(exe_.tensors()));
      const fb::Tensor *t = exe_.tensors()->Get(io->tensor());
      if (t->role() != fb::TensorRole::Constant || t->constant() < 0)
        bad(where, "tensor {} is not a constant with data of its own", io->tensor());
      checkDType(where, io->dtype());
      if (io->dtype() != t->dtype())
        bad(where, "dtype differs from tensor {}", io->tensor());
    }
  }

  void checkTileBytesUsed() {
    uint32_t n = len(exe_.tile_bytes_used());
    if (n != 0 && n != numTiles_)
      bad("tile_bytes_used", "has {} entries, expected 0 or one per tile ({})", n, numTiles_);
    for (uint32_t i = 0; i < n; ++i)
      if (exe_.tile_bytes_used()->Get(i) > bytesPerTile_)
        bad(fmt::format("tile_bytes_used[{}]", i), "{} exceeds bytes_per_tile {}",
            exe_.tile_bytes_used()->Get(i), bytesPerTile_);
    if (n)
      tileBytesUsed_ = exe_.tile_bytes_used();
  }

  // A check names a compute set and an int64 tensor of [flag, value, position]
  // records, and a message of at most kMaxCheckMessage bytes.
  void checkRunChecks() {
    constexpr uint32_t kMaxCheckMessage = 4096;
    for (uint32_t i = 0; i < len(exe_.checks()); ++i) {
      const fb::Check *c = exe_.checks()->Get(i);
      const std::string where = fmt::format("checks[{}]", i);
      if (c->compute_set() >= len(exe_.compute_sets()))
        bad(where, "compute_set {} out of range ({} compute sets)", c->compute_set(), len(exe_.compute_sets()));
      if (c->tensor() >= len(exe_.tensors()))
        bad(where, "tensor {} out of range ({} tensors)", c->tensor(), len(exe_.tensors()));
      const fb::Tensor *t = exe_.tensors()->Get(c->tensor());
      if (t->dtype() != fb::DType::I64)
        bad(where, "tensor {} must be int64, is {}", c->tensor(), fb::EnumNameDType(t->dtype()));
      for (uint32_t j = 0; j < len(t->mapping()); ++j)
        if (const fb::TileInterval *iv = t->mapping()->Get(j); iv->begin() % 24 != 0 || iv->bytes() % 24 != 0 || iv->offset() % 8 != 0)
          bad(where, "tensor {} interval at byte {} does not hold whole aligned [flag, value, position] records",
              c->tensor(), iv->begin());
      if (!c->message() || c->message()->size() == 0 || c->message()->size() > kMaxCheckMessage)
        bad(where, "message must be 1 to {} bytes", kMaxCheckMessage);
    }
  }

  const fb::Executable &exe_;
  const Segment segment_; // where constants in the data segment are
  const std::string &label_;
  const unsigned threads_;
  uint32_t numTiles_ = 0;
  uint64_t bytesPerTile_ = 0;
  const flatbuffers::Vector<uint32_t> *tileBytesUsed_ = nullptr; // set once checked, when present
  std::vector<uint8_t> fnState_; // 0 unvisited, 1 on stack, 2 done
  std::vector<uint32_t> fnDepth_;
};

} // namespace

void verifySemantics(const fb::Executable &exe, const Segment &segment, const std::string &label,
                     unsigned threads) {
  Checker(exe, segment, label, threads).run();
}

std::span<const uint8_t> constantBytes(const fb::ConstantData &c, const Segment &segment) {
  if (c.size())
    return segment.bytes.subspan(c.offset() - segment.start, c.size());
  return c.data() ? std::span<const uint8_t>(c.data()->data(), c.data()->size()) : std::span<const uint8_t>();
}

uint64_t tensorBytes(const fb::Tensor &t) {
  uint64_t n = dtypeSize(static_cast<DType>(t.dtype()));
  if (t.shape())
    for (int64_t d : *t.shape())
      n *= static_cast<uint64_t>(d);
  return n;
}

Shape tensorShape(const fb::Tensor &t) {
  return t.shape() ? Shape(t.shape()->begin(), t.shape()->end()) : Shape{};
}

} // namespace popc::popef
