#include "cache/remote_store.h"

#include "cache/entry.h"
#include "support/error.h"
#include "support/log.h"

#include <curl/curl.h>

#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fmt/format.h>
#include <type_traits>
#include <string>

namespace popc::cache {

namespace {

auto logger() { return log::get("cache"); }

// libcurl is loaded when a remote cache is first used, not linked: with the
// two dozen libraries it depends on (TLS, Kerberos, LDAP, IDN) it cost every
// poprun-lite and popc-onnx start about 6 ms of dynamic linking, remote cache
// or not (docs/performance.md, sixteenth round).
struct Curl {
  CURLcode (*globalInit)(long) = nullptr;
  CURL *(*easyInit)() = nullptr;
  void (*easyCleanup)(CURL *) = nullptr;
  CURLcode (*easySetopt)(CURL *, CURLoption, ...) = nullptr;
  CURLcode (*easyPerform)(CURL *) = nullptr;
  CURLcode (*easyGetinfo)(CURL *, CURLINFO, ...) = nullptr;
  const char *(*easyStrerror)(CURLcode) = nullptr;
  std::string error; // why libcurl is not usable; empty when it is
};

Curl loadCurl() {
  Curl c;
  void *lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = ::dlerror();
    c.error = fmt::format("cannot load libcurl.so.4 ({}); install libcurl4", why ? why : "unknown error");
    return c;
  }
  auto bind = [&](auto &fn, const char *name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(lib, name));
    if (!fn && c.error.empty())
      c.error = fmt::format("libcurl.so.4 has no {}", name);
  };
  bind(c.globalInit, "curl_global_init");
  bind(c.easyInit, "curl_easy_init");
  bind(c.easyCleanup, "curl_easy_cleanup");
  bind(c.easySetopt, "curl_easy_setopt");
  bind(c.easyPerform, "curl_easy_perform");
  bind(c.easyGetinfo, "curl_easy_getinfo");
  bind(c.easyStrerror, "curl_easy_strerror");
  if (c.error.empty())
    c.globalInit(CURL_GLOBAL_DEFAULT);
  return c; // the library stays loaded for the process
}

// Loaded (and curl_global_init called) once, on first use.
const Curl &curl() {
  static const Curl c = loadCurl();
  return c;
}

// One transfer: its URL, no signals, the remote's timeouts.
struct Easy {
  CURL *h = curl().easyInit();
  Easy(const std::string &url, const RemoteOptions &options) {
    curl().easySetopt(h, CURLOPT_URL, url.c_str());
    curl().easySetopt(h, CURLOPT_NOSIGNAL, 1L);
    curl().easySetopt(h, CURLOPT_CONNECTTIMEOUT_MS, options.connectTimeoutMs);
    curl().easySetopt(h, CURLOPT_TIMEOUT_MS, options.timeoutMs);
  }
  ~Easy() { curl().easyCleanup(h); }
  Easy(const Easy &) = delete;
  Easy &operator=(const Easy &) = delete;
};

size_t appendBody(char *data, size_t size, size_t n, void *user) {
  auto *body = static_cast<std::vector<uint8_t> *>(user);
  body->insert(body->end(), data, data + size * n);
  return size * n;
}

struct Upload {
  std::span<const uint8_t> parts[2];
  size_t part = 0, offset = 0;
};

size_t readBody(char *out, size_t size, size_t n, void *user) {
  auto *u = static_cast<Upload *>(user);
  size_t room = size * n, done = 0;
  while (room && u->part < 2) {
    auto p = u->parts[u->part];
    size_t take = std::min(room, p.size() - u->offset);
    std::memcpy(out + done, p.data() + u->offset, take);
    done += take;
    room -= take;
    u->offset += take;
    if (u->offset == p.size()) {
      ++u->part;
      u->offset = 0;
    }
  }
  return done;
}

// Credentials never reach the log.
std::string redact(const std::string &url) {
  auto scheme = url.find("://");
  auto at = url.find('@');
  if (scheme == std::string::npos || at == std::string::npos || at < scheme)
    return url;
  return url.substr(0, scheme + 3) + "***@" + url.substr(at + 1);
}

} // namespace

RemoteStore::RemoteStore(std::string url, RemoteOptions options) : url_(std::move(url)), options_(options) {
  while (!url_.empty() && url_.back() == '/')
    url_.pop_back();
  if (!url_.starts_with("http://") && !url_.starts_with("https://"))
    fail("--remote-cache '{}': expected an http:// or https:// URL (POPC_REMOTE_CACHE)", redact(url_));
  if (const std::string &why = curl().error; !why.empty()) {
    logger()->warn("remote cache {}: {}; using the local cache only", redact(url_), why);
    disabled_ = true;
  }
}

std::string RemoteStore::describe() const { return "remote " + redact(url_); }

std::string RemoteStore::urlFor(std::string_view kind, std::string_view key) const {
  return url_ + "/" + std::string(kind) + "/" + std::string(key);
}

std::optional<Blob> RemoteStore::get(std::string_view kind, std::string_view key) {
  checkKind(kind);
  Digest digest;
  if (!parseKey(key, digest) || disabled_)
    return std::nullopt;
  const std::string url = urlFor(kind, key);
  Easy e(url, options_);
  std::vector<uint8_t> body;
  curl().easySetopt(e.h, CURLOPT_FOLLOWLOCATION, 1L);
  curl().easySetopt(e.h, CURLOPT_WRITEFUNCTION, appendBody);
  curl().easySetopt(e.h, CURLOPT_WRITEDATA, &body);
  CURLcode rc = curl().easyPerform(e.h);
  if (rc != CURLE_OK) {
    logger()->warn("remote cache {}: GET failed: {}; compiling locally and not using the remote cache "
                   "for the rest of this run",
                   redact(url_), curl().easyStrerror(rc));
    disabled_ = true;
    return std::nullopt;
  }
  long status = 0;
  curl().easyGetinfo(e.h, CURLINFO_RESPONSE_CODE, &status);
  if (status == 404)
    return std::nullopt;
  if (status != 200) {
    logger()->warn("remote cache {}: GET {}/{} returned HTTP {}; treating it as a miss", redact(url_), kind, key,
                   status);
    return std::nullopt;
  }
  if (std::string why = checkEntry(body, digest); !why.empty()) {
    logger()->warn("remote cache {}: object {}/{} is bad ({}); ignoring it (it is replaced after the rebuild)",
                   redact(url_), kind, key, why);
    return std::nullopt;
  }
  logger()->debug("remote cache hit {}/{}", kind, key);
  body.erase(body.begin(), body.begin() + kHeaderSize);
  return Blob(std::move(body));
}

void RemoteStore::put(std::string_view kind, std::string_view key, std::span<const uint8_t> payload) {
  checkKind(kind);
  Digest digest;
  if (!parseKey(key, digest) || disabled_)
    return;
  const std::string url = urlFor(kind, key);
  const auto header = encodeHeader(digest, payload);
  Upload upload{{std::span<const uint8_t>(header), payload}};
  Easy e(url, options_);
  curl().easySetopt(e.h, CURLOPT_UPLOAD, 1L);
  curl().easySetopt(e.h, CURLOPT_READFUNCTION, readBody);
  curl().easySetopt(e.h, CURLOPT_READDATA, &upload);
  curl().easySetopt(e.h, CURLOPT_INFILESIZE_LARGE, curl_off_t(header.size() + payload.size()));
  curl().easySetopt(e.h, CURLOPT_WRITEFUNCTION, +[](char *, size_t s, size_t n, void *) { return s * n; });
  CURLcode rc = curl().easyPerform(e.h);
  if (rc != CURLE_OK) {
    logger()->warn("remote cache {}: PUT failed: {}; the result is cached locally only", redact(url_),
                   curl().easyStrerror(rc));
    disabled_ = true;
    return;
  }
  long status = 0;
  curl().easyGetinfo(e.h, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status >= 300)
    logger()->warn("remote cache {}: PUT {}/{} returned HTTP {}; the result is cached locally only",
                   redact(url_), kind, key, status);
  else
    logger()->debug("remote cache stored {}/{}", kind, key);
}

} // namespace popc::cache
