// A compute set's vertices folded into repeats (format 5): a tile's workers
// running one kernel on consecutive slices are stored as one vertex and the
// strides of its fields.
#include "formats/popef/popef.h"

namespace popc::popef {

namespace fb = ::popef::fb;

uint64_t vertexCount(const fb::ComputeSet &cs) {
  uint64_t n = len(cs.vertices());
  for (uint32_t r = 0; r < len(cs.vertex_repeats()); ++r)
    n += cs.vertex_repeats()->Get(r)->repeat();
  return n;
}

void foldVertices(fb::ComputeSetT &cs, const std::vector<uint32_t> &fields) {
  const std::vector<fb::Vertex> vertices = std::move(cs.vertices);
  const std::vector<uint32_t> offsets = std::move(cs.field_offsets);
  cs.vertices.clear();
  cs.field_offsets.clear();
  cs.vertex_repeats.clear();
  cs.field_strides.clear();
  std::vector<uint32_t> strides;
  for (size_t v = 0; v < vertices.size();) {
    const fb::Vertex &head = vertices[v];
    const uint32_t nf = fields.at(head.type());
    const uint32_t *first = offsets.data() + head.fields_begin();
    // Vertex v + k continues the run when it is of the same type on the same
    // tile and each field is k strides (>= 0) further on.
    size_t end = v + 1;
    if (end < vertices.size() && vertices[end].type() == head.type() && vertices[end].tile() == head.tile()) {
      const uint32_t *second = offsets.data() + vertices[end].fields_begin();
      strides.assign(nf, 0);
      bool forward = true;
      for (uint32_t f = 0; f < nf && forward; ++f) {
        forward = second[f] >= first[f];
        strides[f] = second[f] - first[f];
      }
      auto continues = [&](size_t w) {
        if (w >= vertices.size() || vertices[w].type() != head.type() || vertices[w].tile() != head.tile() ||
            w - v > UINT32_MAX)
          return false;
        const uint32_t *at = offsets.data() + vertices[w].fields_begin();
        for (uint32_t f = 0; f < nf; ++f)
          if (uint64_t(at[f]) != first[f] + uint64_t(w - v) * strides[f])
            return false;
        return true;
      };
      while (forward && continues(end))
        ++end;
    }
    if (end - v > 1) {
      cs.vertex_repeats.emplace_back(uint32_t(cs.vertices.size()), uint32_t(end - v - 1),
                                     uint32_t(cs.field_strides.size()));
      cs.field_strides.insert(cs.field_strides.end(), strides.begin(), strides.end());
    }
    cs.vertices.emplace_back(head.type(), head.tile(), uint32_t(cs.field_offsets.size()));
    cs.field_offsets.insert(cs.field_offsets.end(), first, first + nf);
    v = end;
  }
}

} // namespace popc::popef
