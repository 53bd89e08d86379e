// .npz = a zip archive of "<key>.npy" members (numpy.savez / savez_compressed), via libzip.
#include "formats/npz/npz.h"

#include "support/file_io.h"
#include "support/error.h"

#include <zip.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

namespace popc::npz {

namespace {

struct ZipDiscard {
  void operator()(zip_t *z) const { zip_discard(z); }
};
using ZipPtr = std::unique_ptr<zip_t, ZipDiscard>;

struct ZipFileClose {
  void operator()(zip_file_t *f) const { zip_fclose(f); }
};
using ZipFilePtr = std::unique_ptr<zip_file_t, ZipFileClose>;

std::string zipErrorString(int code) {
  zip_error_t error;
  zip_error_init_with_code(&error, code);
  std::string s = zip_error_strerror(&error);
  zip_error_fini(&error);
  return s;
}

constexpr std::string_view kSuffix = ".npy";

// Reads one member fully. Grows the buffer only as data actually arrives, so a
// forged size field cannot trigger a huge allocation.
std::vector<uint8_t> readMember(zip_t *zip, zip_uint64_t index, const zip_stat_t &st,
                                const std::string &label) {
  ZipFilePtr file(zip_fopen_index(zip, index, 0));
  if (!file)
    fail("{}: cannot open zip member: {}; fix: re-save with numpy.savez", label, zip_strerror(zip));
  std::vector<uint8_t> out;
  constexpr zip_uint64_t kChunk = 1 << 20;
  out.reserve(std::min<zip_uint64_t>(st.size, 64 * kChunk));
  for (;;) {
    size_t old = out.size();
    out.resize(old + kChunk);
    zip_int64_t n = zip_fread(file.get(), out.data() + old, kChunk);
    if (n < 0)
      fail("{}: corrupt zip member: {}; fix: re-save with numpy.savez", label,
           zip_file_strerror(file.get()));
    out.resize(old + static_cast<size_t>(n));
    if (out.size() > st.size)
      fail("{}: zip member is larger than its recorded size {}; fix: re-save with numpy.savez",
           label, st.size);
    if (n == 0)
      break;
  }
  if (out.size() != st.size)
    fail("{}: zip member has {} bytes but its recorded size is {}; fix: re-save with numpy.savez",
         label, out.size(), st.size);
  return out;
}

// 1980-01-01 00:00 local time: libzip converts mtime to a DOS date via localtime,
// so this is the same DOS timestamp (the earliest representable) in every time zone.
time_t fixedMtime() {
  std::tm tm{};
  tm.tm_year = 80;
  tm.tm_mon = 0;
  tm.tm_mday = 1;
  tm.tm_hour = 12; // midday keeps the date stable across DST transitions
  tm.tm_isdst = -1;
  return std::mktime(&tm);
}

void writeEmptyZip(const std::string &path) {
  // libzip deletes archives without members; numpy writes a bare end-of-central-directory.
  static const uint8_t kEocd[22] = {0x50, 0x4b, 0x05, 0x06};
  writeFileAtomically(path, std::span<const uint8_t>(kEocd, sizeof(kEocd)));
}

// Reads every member of an opened archive; `where` names it in errors.
ArrayMap readMembers(zip_t *zip, const std::string &where, uint64_t maxBytes) {
  ArrayMap arrays;
  zip_int64_t count = zip_get_num_entries(zip, 0);
  uint64_t total = 0; // recorded uncompressed sizes so far
  for (zip_int64_t i = 0; i < count; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    if (zip_stat_index(zip, i, 0, &st) != 0 || !(st.valid & ZIP_STAT_NAME) ||
        !(st.valid & ZIP_STAT_SIZE))
      fail("{}: corrupt zip entry {}: {}; fix: re-save with numpy.savez", where, i,
           zip_strerror(zip));
    std::string name = st.name;
    std::string label = fmt::format("{}: member '{}'", where, name);
    if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix))
      fail("{}: is not a .npy array (npz members must be named <key>.npy); fix: write the "
           "file with numpy.savez",
           label);
    if ((st.valid & ZIP_STAT_ENCRYPTION_METHOD) && st.encryption_method != ZIP_EM_NONE)
      fail("{}: encrypted zip members are not supported; fix: save without encryption", label);
    std::string key = name.substr(0, name.size() - kSuffix.size());
    // readMember never reads past the recorded size, so this bounds inflation.
    if (st.size > maxBytes - total)
      fail("{}: inflates to {} bytes, which with the members before it exceeds the limit of {} bytes "
           "(a zip bomb?); fix: raise --max-memory if the file is trusted",
           label, st.size, maxBytes);
    total += st.size;
    std::vector<uint8_t> bytes = readMember(zip, i, st, label);
    if (!arrays.emplace(key, readNpy(bytes, label)).second)
      fail("{}: duplicate array key '{}'; fix: re-save with unique names", label, key);
  }
  return arrays;
}

[[noreturn]] void failOpen(const std::string &where, int code) {
  if (code == ZIP_ER_NOZIP || code == ZIP_ER_INCONS)
    fail("{}: not a valid .npz (zip) archive: {}; fix: write it with numpy.savez", where,
         zipErrorString(code));
  fail("{}: cannot open .npz archive: {}", where, zipErrorString(code));
}

} // namespace

ArrayMap readNpz(const std::string &path, uint64_t maxBytes) {
  std::error_code ec;
  auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status))
    fail("{}: file not found; fix: check the path", path);
  if (!std::filesystem::is_regular_file(status))
    fail("{}: not a regular file; fix: pass a .npz file", path);
  if (std::filesystem::file_size(path, ec) == 0)
    fail("{}: empty file is not a .npz archive; fix: write it with numpy.savez", path);

  int code = 0;
  ZipPtr zip(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  if (!zip)
    failOpen(path, code);
  return readMembers(zip.get(), path, maxBytes);
}

ArrayMap readNpzBytes(std::span<const uint8_t> bytes, const std::string &label, uint64_t maxBytes) {
  if (bytes.empty())
    fail("{}: empty file is not a .npz archive; fix: write it with numpy.savez", label);
  zip_error_t error;
  zip_error_init(&error);
  // freep=0: libzip only reads `bytes`, which outlive the archive.
  zip_source_t *src = zip_source_buffer_create(bytes.data(), bytes.size(), 0, &error);
  if (!src) {
    int code = zip_error_code_zip(&error);
    zip_error_fini(&error);
    failOpen(label, code);
  }
  ZipPtr zip(zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &error));
  if (!zip) {
    zip_source_free(src); // still ours when the open failed
    int code = zip_error_code_zip(&error);
    zip_error_fini(&error);
    failOpen(label, code);
  }
  zip_error_fini(&error);
  return readMembers(zip.get(), label, maxBytes);
}

void writeNpz(const std::string &path, const ArrayMap &arrays, bool compressed) {
  if (arrays.empty())
    return writeEmptyZip(path);
  // libzip reads these buffers only in zip_close, so they must outlive it.
  std::vector<std::vector<uint8_t>> members;
  members.reserve(arrays.size());
  for (const auto &[key, array] : arrays) {
    if (key.empty() || key.find('\0') != std::string::npos)
      fail("{}: invalid array name '{}'; fix: use a non-empty name", path, key);
    members.push_back(writeNpy(array));
  }

  // libzip writes the archive to a temporary file and renames it over `path` in
  // zip_close, so readers never see a half-written file.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    fail("{}: is a directory; fix: name the .npz file to write (e.g. {})", path,
         (std::filesystem::path(path) / "outputs.npz").string());
  int code = 0;
  ZipPtr zip(zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code));
  if (!zip)
    fail("{}: cannot create .npz archive: {}; fix: check the directory exists and is writable",
         path, zipErrorString(code));
  const time_t mtime = fixedMtime();
  size_t m = 0;
  for (const auto &[key, array] : arrays) {
    const auto &bytes = members[m++];
    zip_source_t *src = zip_source_buffer(zip.get(), bytes.data(), bytes.size(), 0);
    zip_int64_t index = src ? zip_file_add(zip.get(), (key + ".npy").c_str(), src, ZIP_FL_ENC_UTF_8)
                            : -1;
    if (index < 0) {
      if (src)
        zip_source_free(src);
      fail("{}: cannot add '{}': {}", path, key, zip_strerror(zip.get()));
    }
    if (zip_set_file_compression(zip.get(), index, compressed ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0) ||
        zip_file_set_mtime(zip.get(), index, mtime, 0) ||
        zip_file_set_external_attributes(zip.get(), index, 0, ZIP_OPSYS_UNIX, 0100644u << 16))
      fail("{}: cannot set attributes of '{}': {}", path, key, zip_strerror(zip.get()));
  }
  if (zip_close(zip.get()) != 0)
    fail("{}: cannot write .npz archive: {}; fix: check the directory is writable", path,
         zip_strerror(zip.get()));
  (void)zip.release(); // zip_close freed it
}

} // namespace popc::npz
