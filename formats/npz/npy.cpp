// .npy read/write (format versions 1.0, 2.0 and 3.0).
#include "formats/npz/npy_header.h"
#include "formats/npz/npz.h"

#include "support/error.h"

#include <cstring>

namespace popc::npz {

namespace {
constexpr uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr size_t kAlign = 64; // numpy's ARRAY_ALIGN

uint32_t readLE(const uint8_t *p, size_t n) {
  uint32_t v = 0;
  for (size_t i = 0; i < n; ++i)
    v |= uint32_t{p[i]} << (8 * i);
  return v;
}

// Byte size of an array with this shape, or an error if it overflows.
uint64_t checkedByteSize(const Shape &shape, DType dtype, const std::string &label) {
  uint64_t n = dtypeSize(dtype);
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > (uint64_t{1} << 62))
      fail("{}: shape {} is too large; fix: re-save the array with numpy.save", label,
           shapeToString(shape));
  }
  return n;
}
} // namespace

Array makeArray(DType dtype, Shape shape, const void *data) {
  Array a;
  a.dtype = dtype;
  uint64_t bytes = checkedByteSize(shape, dtype, "makeArray");
  a.shape = std::move(shape);
  a.data.resize(bytes);
  if (data && bytes)
    std::memcpy(a.data.data(), data, bytes);
  return a;
}

Array readNpy(std::span<const uint8_t> bytes, const std::string &label) {
  if (bytes.size() < 10 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    fail("{}: not a .npy array (bad magic or truncated); fix: write it with numpy.save", label);
  uint8_t major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0)
    fail("{}: unsupported .npy format version {}.{} (expected 1.0, 2.0 or 3.0); fix: re-save "
         "with numpy.save",
         label, major, minor);
  size_t lenBytes = major == 1 ? 2 : 4;
  size_t headerStart = 8 + lenBytes;
  if (bytes.size() < headerStart)
    fail("{}: truncated .npy header; fix: re-save with numpy.save", label);
  uint64_t headerLen = readLE(bytes.data() + 8, lenBytes);
  if (headerLen > bytes.size() - headerStart)
    fail("{}: truncated .npy file: header length {} exceeds the {} bytes present; fix: re-save "
         "with numpy.save",
         label, headerLen, bytes.size() - headerStart);
  std::string_view text(reinterpret_cast<const char *>(bytes.data() + headerStart), headerLen);
  detail::NpyHeader header = detail::parseHeaderDict(text, label);

  Array a;
  a.dtype = detail::parseDescr(header.descr, label);
  a.shape = std::move(header.shape);
  // Fortran order only changes the layout when two or more axes are longer than 1.
  int longAxes = 0;
  for (int64_t d : a.shape)
    longAxes += d > 1;
  if (header.fortranOrder && longAxes > 1)
    fail("{}: Fortran-ordered array (fortran_order: True) is not supported; fix: save with "
         "np.ascontiguousarray(arr)",
         label);

  uint64_t want = checkedByteSize(a.shape, a.dtype, label);
  uint64_t have = bytes.size() - headerStart - headerLen;
  if (have != want)
    fail("{}: shape {} of {} needs {} data bytes but the file has {}; fix: the file is truncated "
         "or corrupt, re-save it with numpy.save",
         label, shapeToString(a.shape), dtypeName(a.dtype), want, have);
  const uint8_t *data = bytes.data() + headerStart + headerLen;
  a.data.assign(data, data + want);
  if (a.dtype == DType::Bool) {
    for (size_t i = 0; i < a.data.size(); ++i)
      if (a.data[i] > 1)
        fail("{}: bool element {} has byte value {} (expected 0 or 1); fix: re-save with "
             "arr.astype(bool)",
             label, i, a.data[i]);
  }
  return a;
}

std::vector<uint8_t> writeNpy(const Array &array) {
  uint64_t want = checkedByteSize(array.shape, array.dtype, "writeNpy");
  POPC_ASSERT(array.data.size() == want);
  std::string dict = detail::formatHeaderDict({detail::formatDescr(array.dtype), false, array.shape});
  // Same layout as numpy: magic, version, length, dict, spaces, '\n', aligned to 64 bytes.
  size_t lenBytes = dict.size() + 1 + kAlign + 10 <= 0xffff ? 2 : 4;
  size_t unpadded = 8 + lenBytes + dict.size() + 1;
  size_t pad = kAlign - unpadded % kAlign;
  uint32_t headerLen = static_cast<uint32_t>(dict.size() + pad + 1);

  std::string head(reinterpret_cast<const char *>(kMagic), sizeof(kMagic));
  head += static_cast<char>(lenBytes == 2 ? 1 : 2);
  head += '\0';
  for (size_t i = 0; i < lenBytes; ++i)
    head += static_cast<char>(headerLen >> (8 * i));
  head += dict;
  head.append(pad, ' ');
  head += '\n';

  std::vector<uint8_t> out(head.size() + array.data.size());
  std::memcpy(out.data(), head.data(), head.size());
  if (!array.data.empty())
    std::memcpy(out.data() + head.size(), array.data.data(), array.data.size());
  return out;
}

} // namespace popc::npz
