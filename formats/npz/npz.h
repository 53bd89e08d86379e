// numpy .npy / .npz files: the host-side tensor format of poprun-lite
// (--inputs / --outputs) and of the test data.
//
// Supported element types: float32/64/16, int8/16/32/64, uint8, bool, little-endian,
// C order. Anything else (big-endian, Fortran order, object, structured) is rejected
// with a one-line popc::Error naming the file, the member and the fix. Every field of
// a file is validated before use, so a corrupt file never crashes or over-allocates.
#pragma once
#include "support/dtype.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace popc::npz {

struct Array {
  DType dtype = DType::F32;
  Shape shape;               // {} for a 0-d (scalar) array
  std::vector<uint8_t> data; // numElements(shape) * dtypeSize(dtype) bytes, C order, little-endian

  bool operator==(const Array &) const = default;
};

// Ordered by key, so iteration (and writeNpz output) is deterministic.
using ArrayMap = std::map<std::string, Array>;

// Copies numElements(shape) elements from `data` (or zero-fills when data is null).
Array makeArray(DType dtype, Shape shape, const void *data);

// Parses one .npy file image. `label` names it in errors ("in.npz: member 'x'").
Array readNpy(std::span<const uint8_t> bytes, const std::string &label);
// Serialises like numpy.save (format 1.0, or 2.0 for huge headers).
std::vector<uint8_t> writeNpy(const Array &array);

// Default bound on the uncompressed bytes of all members of one archive (a zip
// bomb is refused before it is inflated); the tools pass their --max-memory.
constexpr uint64_t kDefaultMaxNpzBytes = 16ull << 30;

// Reads every member "<key>.npy" of a .npz (stored or deflated) into map[key].
// Members whose recorded sizes add up to more than `maxBytes` are refused before
// reading; a member that inflates past its recorded size stops at that size.
ArrayMap readNpz(const std::string &path, uint64_t maxBytes = kDefaultMaxNpzBytes);
// Same for an archive already in memory (no file needed); `label` names it in errors.
ArrayMap readNpzBytes(std::span<const uint8_t> bytes, const std::string &label,
                      uint64_t maxBytes = kDefaultMaxNpzBytes);
// Writes a .npz like numpy.savez (compressed=false) / savez_compressed (true).
// Output bytes depend only on the arguments (fixed member timestamps, key order);
// the file is written to a temporary name and renamed into place.
void writeNpz(const std::string &path, const ArrayMap &arrays, bool compressed = false);

} // namespace popc::npz
