#include "cache/entry.h"
#include "cache/hash.h"
#include "cache/local_store.h"
#include "cache/remote_store.h"
#include "cache/size.h"
#include "cache/tiered_store.h"
#include "support/error.h"
#include "test/unit/temp_dir.h"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <atomic>
#include <thread>

using namespace popc;
using namespace popc::cache;
using popc::test::TempDir;
namespace fs = std::filesystem;

namespace {

std::vector<uint8_t> bytesOf(const std::string &s) { return {s.begin(), s.end()}; }
std::string keyOf(const std::string &s) { return hashBytes(bytesOf(s)).hex(); }
std::string str(const Blob &b) { return {b.bytes().begin(), b.bytes().end()}; }

// The payload file; its header is beside it with ".meta" appended.
fs::path entryFile(const fs::path &dir, const std::string &kind, const std::string &key) {
  return dir / kind / key.substr(0, 2) / key;
}
fs::path metaFile(const fs::path &dir, const std::string &kind, const std::string &key) {
  return entryFile(dir, kind, key).string() + ".meta";
}

// Sets a file's mtime `seconds` into the past (an entry written a while ago).
void age(const fs::path &p, int seconds) {
  struct stat st{};
  REQUIRE(::stat(p.c_str(), &st) == 0);
  struct timespec times[2] = {st.st_atim, st.st_mtim};
  times[1].tv_sec -= seconds;
  REQUIRE(::utimensat(AT_FDCWD, p.c_str(), times, 0) == 0);
}

std::vector<uint8_t> readAll(const fs::path &p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
// Overwrites `p` in place, as a stray process or a bad disk would (payload
// files are read-only, so first make it writable).
void writeAll(const fs::path &p, const std::vector<uint8_t> &b) {
  std::error_code ec;
  fs::permissions(p, fs::perms::owner_write, fs::perm_options::add, ec);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char *>(b.data()), std::streamsize(b.size()));
}

// An in-memory "remote" that can be switched to fail or to corrupt.
struct FakeRemote : Store {
  std::map<std::string, std::vector<uint8_t>> objects;
  int gets = 0, puts = 0;
  std::optional<Blob> get(std::string_view kind, std::string_view key) override {
    ++gets;
    auto it = objects.find(std::string(kind) + "/" + std::string(key));
    if (it == objects.end())
      return std::nullopt;
    return Blob(it->second);
  }
  void put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) override {
    ++puts;
    objects[std::string(kind) + "/" + std::string(key)] = {payload.begin(), payload.end()};
  }
  std::string describe() const override { return "fake"; }
};

} // namespace

TEST_CASE("keys are XXH3-128 as 32 hex digits, fields are framed", "[cache]") {
  std::string k = keyOf("hello");
  CHECK(k.size() == 32);
  CHECK(isKey(k));
  CHECK_FALSE(isKey("ABCDEF0123456789abcdef0123456789")); // uppercase
  CHECK_FALSE(isKey("../etc/passwd"));
  CHECK_FALSE(isKey(k.substr(1)));
  Digest d;
  REQUIRE(parseKey(k, d));
  CHECK(d.hex() == k);
  Hasher a, b;
  a.field("x", "ab");
  a.field("y", "c");
  b.field("x", "a");
  b.field("y", "bc");
  CHECK_FALSE(a.digest() == b.digest());
}

TEST_CASE("entry header checks magic, version, size, key and payload hash", "[cache]") {
  auto payload = bytesOf("payload bytes");
  Digest key;
  parseKey(keyOf("k"), key);
  auto header = encodeHeader(key, payload);
  std::vector<uint8_t> entry(header.begin(), header.end());
  entry.insert(entry.end(), payload.begin(), payload.end());
  CHECK(checkEntry(entry, key).empty());

  auto flipped = entry;
  flipped.back() ^= 1;
  CHECK_THAT(checkEntry(flipped, key), Catch::Contains("hash mismatch"));
  auto truncated = entry;
  truncated.pop_back();
  CHECK_THAT(checkEntry(truncated, key), Catch::Contains("truncated"));
  CHECK_THAT(checkEntry(std::span(entry).first(10), key), Catch::Contains("truncated"));
  Digest other;
  parseKey(keyOf("other"), other);
  CHECK_THAT(checkEntry(entry, other), Catch::Contains("foreign"));
  auto badMagic = entry;
  badMagic[0] = 'X';
  CHECK_THAT(checkEntry(badMagic, key), Catch::Contains("magic"));
  auto badVersion = entry;
  badVersion[8] = 99;
  CHECK_THAT(checkEntry(badVersion, key), Catch::Contains("version"));
}

TEST_CASE("sizes parse with binary suffixes", "[cache]") {
  CHECK(parseSize("5G", "x") == 5ull << 30);
  CHECK(parseSize("500M", "x") == 500ull << 20);
  CHECK(parseSize("64k", "x") == 64ull << 10);
  CHECK(parseSize("1.5GiB", "x") == 3ull << 29);
  CHECK(parseSize("123", "x") == 123);
  CHECK_THROWS_WITH(parseSize("5X", "--cache-max-size"), Catch::Contains("--cache-max-size '5X'"));
  CHECK_THROWS_AS(parseSize("", "x"), Error);
  CHECK_THROWS_AS(parseSize("-1G", "x"), Error);
  CHECK(formatSize(1536) == "1.5 KiB");
}

TEST_CASE("local store: miss, put, hit and counters", "[cache]") {
  TempDir t;
  LocalStore s(t.path() / "c");
  std::string k = keyOf("a");
  CHECK_FALSE(s.get("exe", k));
  s.put("exe", k, bytesOf("executable"));
  auto hit = s.get("exe", k);
  REQUIRE(hit);
  CHECK(str(*hit) == "executable");
  CHECK(fs::exists(entryFile(t.path() / "c", "exe", k)));
  CHECK_FALSE(s.get("obj", k)); // kinds are separate namespaces
  auto c = s.counters();
  CHECK(c["exe.hits"] == 1);
  CHECK(c["exe.misses"] == 1);
  CHECK(c["exe.writes"] == 1);
  CHECK(c["obj.misses"] == 1);
  CHECK(c["exe.entries"] == 1);
  CHECK(c["exe.bytes"] == int64_t(kHeaderSize + 10));
  REQUIRE(s.entries().size() == 1);
  CHECK(s.entries()[0].key == k);
  CHECK_THROWS_AS(s.get("../x", k), Error);
  CHECK_THROWS_AS(s.get("exe", "../../etc/passwd"), Error);
}

// Every name the cache itself creates at the top of its directory.
const std::vector<std::string> kCacheFileNames = {"stats", "stats.lock", "stats.tmp-1", "evict.lock",
                                                  "evict.lock.walk", "exe", "obj", "CACHEDIR.TAG"};

// A directory of a user's files, one per name the cache uses, and their bytes.
std::map<std::string, std::string> fillWithUserFiles(const fs::path &dir) {
  std::map<std::string, std::string> files;
  fs::create_directories(dir);
  for (const std::string &name : kCacheFileNames) {
    files[name] = "user data in " + name + "\n";
    writeAll(dir / name, bytesOf(files[name]));
  }
  return files;
}

void requireUntouched(const fs::path &dir, const std::map<std::string, std::string> &files) {
  size_t count = 0;
  for (const auto &e : fs::directory_iterator(dir)) {
    ++count;
    INFO(e.path());
    REQUIRE(files.count(e.path().filename().string()));
    const auto bytes = readAll(e.path());
    CHECK(std::string(bytes.begin(), bytes.end()) == files.at(e.path().filename().string()));
  }
  CHECK(count == files.size());
}

TEST_CASE("a directory that is not a popc cache is refused and left untouched", "[cache]") {
  TempDir t;
  for (const std::string &name : kCacheFileNames) {
    // One user file of a cache name at a time, then all of them.
    const fs::path dir = t.path() / ("one-" + name);
    fs::create_directories(dir);
    writeAll(dir / name, bytesOf("mine"));
    CHECK_THROWS_WITH(LocalStore(dir), Catch::Contains("not a popc cache directory"));
    CHECK_THROWS_WITH(LocalStore(dir, kDefaultMaxSize, OpenMode::ExistingCacheOnly),
                      Catch::Contains("not a popc cache directory"));
    requireUntouched(dir, {{name, "mine"}});
  }
  const fs::path dir = t.path() / "all";
  const auto files = fillWithUserFiles(dir);
  CHECK_THROWS_WITH(LocalStore(dir), Catch::Contains("popc will not touch it"));
  requireUntouched(dir, files);
}

TEST_CASE("a new or empty directory becomes a marked cache, maintenance needs the mark", "[cache]") {
  TempDir t;
  CHECK_THROWS_WITH(LocalStore(t.path() / "missing", kDefaultMaxSize, OpenMode::ExistingCacheOnly),
                    Catch::Contains("does not exist"));
  CHECK_FALSE(fs::exists(t.path() / "missing"));
  fs::create_directories(t.path() / "empty");
  CHECK_THROWS_WITH(LocalStore(t.path() / "empty", kDefaultMaxSize, OpenMode::ExistingCacheOnly),
                    Catch::Contains("is empty"));
  CHECK(fs::is_empty(t.path() / "empty"));
  for (const char *name : {"new", "empty"}) {
    LocalStore s(t.path() / name);
    CHECK(fs::exists(t.path() / name / kCacheMarkerName));
    s.put("exe", keyOf("a"), bytesOf("x"));
    LocalStore maintenance(t.path() / name, kDefaultMaxSize, OpenMode::ExistingCacheOnly);
    CHECK(maintenance.clean() == 1);
    CHECK(fs::exists(t.path() / name / kCacheMarkerName)); // clean keeps the cache a cache
  }
  writeAll(t.path() / "new" / kCacheMarkerName,
           bytesOf("Signature: 8a477f597d28d172789f06886806bc55\n# popc-layout-version: 99\n"));
  CHECK_THROWS_WITH(LocalStore(t.path() / "new"), Catch::Contains("layout version 99"));
}

TEST_CASE("large entries are mmapped and verified", "[cache]") {
  TempDir t;
  LocalStore s(t.path());
  std::vector<uint8_t> big(3 << 20);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = uint8_t(i * 7);
  std::string k = keyOf("big");
  s.put("exe", k, big);
  auto hit = s.get("exe", k);
  REQUIRE(hit);
  CHECK(std::equal(big.begin(), big.end(), hit->bytes().begin(), hit->bytes().end()));
  auto entry = readAll(entryFile(t.path(), "exe", k));
  entry[entry.size() / 2] ^= 0x40;
  writeAll(entryFile(t.path(), "exe", k), entry);
  CHECK_FALSE(s.get("exe", k));
}

TEST_CASE("corrupt, truncated and foreign entries are deleted and never served", "[cache]") {
  TempDir t;
  LocalStore s(t.path());
  std::string a = keyOf("a"), b = keyOf("b");
  s.put("exe", a, bytesOf("AAAA"));
  s.put("exe", b, bytesOf("BBBB"));
  const fs::path pa = entryFile(t.path(), "exe", a), pb = entryFile(t.path(), "exe", b);

  SECTION("bit flip") {
    auto e = readAll(pa);
    e.back() ^= 1;
    writeAll(pa, e);
  }
  SECTION("truncated") {
    auto e = readAll(pa);
    e.resize(e.size() - 1);
    writeAll(pa, e);
  }
  SECTION("cut short") { writeAll(pa, {1, 2, 3}); }
  SECTION("empty") { writeAll(pa, {}); }
  SECTION("another key's payload under this name") {
    writeAll(pa, readAll(pb));
  }
  SECTION("foreign: another key's whole entry under this name") {
    writeAll(pa, readAll(pb));
    writeAll(metaFile(t.path(), "exe", a), readAll(metaFile(t.path(), "exe", b)));
  }
  SECTION("header cut") { writeAll(metaFile(t.path(), "exe", a), {1, 2, 3}); }
  SECTION("header not a header") {
    writeAll(metaFile(t.path(), "exe", a), bytesOf("#!/bin/sh\necho hi\n and more bytes to pass 64 of header ... ......."));
  }
  SECTION("payload gone") { fs::remove(pa); }

  CHECK_FALSE(s.get("exe", a));
  CHECK_FALSE(fs::exists(pa));
  CHECK_FALSE(fs::exists(metaFile(t.path(), "exe", a)));
  CHECK(s.counters()["exe.corrupt"] == 1);
  CHECK(str(*s.get("exe", b)) == "BBBB"); // others unharmed
  s.put("exe", a, bytesOf("AAAA"));        // rebuilt
  CHECK(str(*s.get("exe", a)) == "AAAA");
}

TEST_CASE("verify reports and deletes bad entries, leaves good ones", "[cache]") {
  TempDir t;
  LocalStore s(t.path());
  for (int i = 0; i < 5; ++i)
    s.put("obj", keyOf(std::to_string(i)), bytesOf("object " + std::to_string(i)));
  CHECK(s.verify().bad.empty());
  auto p = entryFile(t.path(), "obj", keyOf("3"));
  auto e = readAll(p);
  e[0] ^= 0xff;
  writeAll(p, e);
  auto r = s.verify();
  CHECK(r.checked == 5);
  REQUIRE(r.bad.size() == 1);
  CHECK_THAT(r.bad[0], Catch::Contains(keyOf("3")));
  CHECK(s.entries().size() == 4);
  CHECK(s.counters()["obj.entries"] == 4);
  CHECK(s.verify().bad.empty());
}

TEST_CASE("temporary files of an unfinished write are never read", "[cache]") {
  TempDir t;
  LocalStore s(t.path());
  std::string k = keyOf("x");
  fs::create_directories(entryFile(t.path(), "exe", k).parent_path());
  writeAll(entryFile(t.path(), "exe", k).parent_path() / (".tmp-" + k + "-1-1"), bytesOf("half"));
  CHECK_FALSE(s.get("exe", k));
  CHECK(s.entries().empty());
}

TEST_CASE("LRU eviction keeps recently used entries under the limit", "[cache]") {
  TempDir t;
  const size_t payload = 1000, entry = payload + kHeaderSize;
  LocalStore s(t.path(), 3 * entry); // room for three
  auto put = [&](const std::string &name) { s.put("exe", keyOf(name), std::vector<uint8_t>(payload, uint8_t(name[0]))); };
  auto pause = [] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
  put("a");
  pause();
  put("b");
  pause();
  put("c");
  pause();
  REQUIRE(s.get("exe", keyOf("a"))); // a is now the most recently used
  pause();
  put("d"); // over the limit: b (least recently used) goes
  CHECK(s.entries().size() == 3);
  CHECK(s.get("exe", keyOf("a")));
  CHECK_FALSE(fs::exists(entryFile(t.path(), "exe", keyOf("b"))));
  CHECK(fs::exists(entryFile(t.path(), "exe", keyOf("c"))));
  CHECK(fs::exists(entryFile(t.path(), "exe", keyOf("d"))));
  CHECK(s.counters()["exe.evictions"] == 1);

  auto r = s.evict(entry); // explicit: keep one, the most recent
  CHECK(r.removed == 2);
  CHECK(r.remaining == entry);
  REQUIRE(s.entries().size() == 1);
  CHECK(s.entries()[0].key == keyOf("a")); // used last by the get above
  CHECK(s.counters()["exe.bytes"] == int64_t(entry));
}

TEST_CASE("clean removes entries and counters", "[cache]") {
  TempDir t;
  LocalStore s(t.path());
  s.put("exe", keyOf("a"), bytesOf("1"));
  s.put("obj", keyOf("b"), bytesOf("2"));
  CHECK(s.clean() == 2);
  CHECK(s.entries().empty());
  CHECK(s.counters().empty());
  CHECK_FALSE(s.get("exe", keyOf("a")));
}

TEST_CASE("counters are exact with many threads and stores on one directory", "[cache]") {
  TempDir t;
  LocalStore seed(t.path());
  seed.put("exe", keyOf("k"), bytesOf("v"));
  std::vector<std::thread> threads;
  // Catch2 assertions are not thread-safe (TSan): count in the threads, check here.
  std::atomic<int> hits{0};
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      LocalStore s(t.path()); // like a separate process: its own store object
      for (int j = 0; j < 25; ++j)
        hits += s.get("exe", keyOf("k")) ? 1 : 0;
    });
  for (auto &th : threads)
    th.join();
  CHECK(hits == 200);
  CHECK(seed.counters()["exe.hits"] == 200);
}

TEST_CASE("tiered store: local, then remote (copied to local), then compute and upload", "[cache]") {
  TempDir t;
  auto local = std::make_shared<LocalStore>(t.path());
  auto remote = std::make_shared<FakeRemote>();
  TieredStore tiered(local, remote);
  std::string k = keyOf("model");
  int computed = 0;
  auto compute = [&] {
    ++computed;
    return bytesOf("compiled");
  };
  CHECK(tiered.getOrCompute("exe", k, compute) == bytesOf("compiled"));
  CHECK(computed == 1);
  CHECK(remote->puts == 1); // uploaded
  CHECK(local->get("exe", k)); // and stored locally

  local->clean(); // another machine: empty local, shared remote
  CHECK(tiered.getOrCompute("exe", k, compute) == bytesOf("compiled"));
  CHECK(computed == 1); // from the remote
  CHECK(local->counters()["exe.remote_hits"] == 1);
  int remoteGets = remote->gets;
  CHECK(tiered.getOrCompute("exe", k, compute) == bytesOf("compiled"));
  CHECK(remote->gets == remoteGets); // now local
}

TEST_CASE("remote store: unreachable server is a miss with a warning, never an error", "[cache]") {
  RemoteStore r("http://127.0.0.1:9/", {200, 1000}); // discard port: nothing listens
  CHECK_FALSE(r.get("exe", keyOf("x")));
  CHECK_NOTHROW(r.put("exe", keyOf("x"), bytesOf("y")));
  CHECK_THROWS_WITH(RemoteStore("ftp://host/x"), Catch::Contains("http://"));
}

TEST_CASE("a settled entry is stamped after a full check, a later change to it is still caught", "[cache]") {
  TempDir t;
  LocalStore s(t.path());
  std::string k = keyOf("stamp");
  s.put("exe", k, bytesOf("payload bytes"));
  const fs::path p = entryFile(t.path(), "exe", k), meta = metaFile(t.path(), "exe", k);
  CHECK(fs::file_size(meta) == kHeaderSize);
  REQUIRE(s.get("exe", k));
  CHECK(fs::file_size(meta) == kHeaderSize); // just written: a change could share its mtime
  age(p, 10);
  REQUIRE(s.get("exe", k));
  CHECK(fs::file_size(meta) == kHeaderSize + 32); // hashed, then stamped
  REQUIRE(str(*s.get("exe", k)) == "payload bytes"); // served on the stamp
  auto e = readAll(p);
  e[3] ^= 1;
  writeAll(p, e); // new mtime: the stamp no longer matches, so it is hashed again
  CHECK_FALSE(s.get("exe", k));
  CHECK(s.counters()["exe.corrupt"] == 1);
}

TEST_CASE("getToFile hard-links a hit (read-only, same inode) or copies it", "[cache]") {
  TempDir t;
  LocalStore s(t.path() / "c");
  std::string k = keyOf("link");
  s.put("exe", k, bytesOf("linked executable"));
  const fs::path p = entryFile(t.path() / "c", "exe", k);
  const std::string out = (t.path() / "out.popef").string();
  writeAll(out, bytesOf("an older output"));
  REQUIRE(s.getToFile("exe", k, out));
  CHECK(readAll(out) == bytesOf("linked executable"));
  CHECK(fs::equivalent(out, p));
  CHECK((fs::status(p).permissions() & fs::perms::all) == (fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read));
  REQUIRE(s.getToFile("exe", k, out)); // again onto the same link: no stray temporary file
  CHECK(std::distance(fs::directory_iterator(t.path()), fs::directory_iterator()) == 2);
  CHECK(fs::hard_link_count(p) == 2);

  fs::remove(out);
  s.setLinkOutputs(false);
  REQUIRE(s.getToFile("exe", k, out));
  CHECK(readAll(out) == bytesOf("linked executable"));
  CHECK_FALSE(fs::equivalent(out, p));
}

TEST_CASE("getToFile streams a verified payload to a file, a bad entry writes nothing", "[cache]") {
  TempDir t;
  LocalStore s(t.path() / "c");
  std::vector<uint8_t> big(5 << 20);
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = uint8_t(i * 13 + 1);
  std::string k = keyOf("stream");
  const std::string out = (t.path() / "out.bin").string();
  CHECK_FALSE(s.getToFile("exe", k, out));
  s.put("exe", k, big);
  auto size = s.getToFile("exe", k, out);
  REQUIRE(size);
  CHECK(*size == big.size());
  CHECK(readAll(out) == big);
  CHECK(s.counters()["exe.hits"] == 1);

  fs::remove(out);
  auto p = entryFile(t.path() / "c", "exe", k);
  auto e = readAll(p);
  e[e.size() - 5] ^= 0x20; // in the last chunk, after 4 MiB
  writeAll(p, e);
  CHECK_FALSE(s.getToFile("exe", k, out));
  CHECK_FALSE(fs::exists(out));
  CHECK_FALSE(fs::exists(p));
  CHECK(s.counters()["exe.corrupt"] == 1);

  // through a tiered store with a remote: the remote hit lands in the file and locally
  auto local = std::make_shared<LocalStore>(t.path() / "c2");
  auto remote = std::make_shared<FakeRemote>();
  remote->put("exe", k, big);
  TieredStore tiered(local, remote);
  REQUIRE(tiered.getToFile("exe", k, out));
  CHECK(readAll(out) == big);
  CHECK(local->get("exe", k));
}

TEST_CASE("lockForCompute: one holder per key, a waiter times out or takes over, no file left", "[cache]") {
  TempDir t;
  LocalStore s(t.path());
  const std::string k = keyOf("model"), other = keyOf("other");
  long seenPid = -1;
  auto held = s.lockForCompute("exe", k, std::chrono::milliseconds(0), [](long) { FAIL("first lock waited"); });
  REQUIRE(held);
  // another holder (flock conflicts between open files, even in one process)
  auto waiter = s.lockForCompute("exe", k, std::chrono::milliseconds(120), [&](long pid) { seenPid = pid; });
  CHECK_FALSE(waiter); // timed out: the caller computes anyway
  CHECK(seenPid == long(::getpid()));
  CHECK(s.lockForCompute("exe", other, std::chrono::milliseconds(0), [](long) { FAIL("keys are separate"); }));
  held.reset(); // released: the lock file goes with it
  const fs::path lockFile = t.path() / "exe" / k.substr(0, 2) / (".lock-" + k);
  CHECK_FALSE(fs::exists(lockFile));
  auto again = s.lockForCompute("exe", k, std::chrono::milliseconds(0), [](long) { FAIL("lock not released"); });
  CHECK(again);
  CHECK(s.entries().empty()); // lock files are not entries
  CHECK(s.verify().bad.empty());
}
