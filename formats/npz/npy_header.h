// The .npy header: a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// Internal to formats/npz.
#pragma once
#include "support/dtype.h"

#include <string>
#include <string_view>

namespace popc::npz::detail {

struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  Shape shape;
};

// Parses the dict text (after the length field); throws popc::Error prefixed by `label`.
NpyHeader parseHeaderDict(std::string_view text, const std::string &label);
// Formats the dict exactly as numpy.save does (before padding).
std::string formatHeaderDict(const NpyHeader &header);

// descr string <-> DType. parseDescr rejects unsupported types with a fix hint.
DType parseDescr(std::string_view descr, const std::string &label);
std::string formatDescr(DType dtype);

} // namespace popc::npz::detail
