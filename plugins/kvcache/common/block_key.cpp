#include "block_key.hpp"

#include <openssl/err.h>
#include <openssl/evp.h>

#include <memory>
#include <new>
#include <stdexcept>
#include <string>

namespace tessera::plugins::memory {
namespace {

// Throws for a failed libcrypto call, with OpenSSL's reason when it left one,
// and clears this thread's error queue.
[[noreturn]] void fail(const char* what) {
  std::string message = std::string("libcrypto: ") + what + " failed";
  if (const unsigned long code = ERR_get_error(); code != 0) {
    char reason[256];
    ERR_error_string_n(code, reason, sizeof(reason));
    message += std::string(": ") + reason;
  }
  ERR_clear_error();
  throw std::runtime_error(message);
}

struct MdFree {
  void operator()(EVP_MD* md) const noexcept { EVP_MD_free(md); }
};
struct MdCtxFree {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};

// SHA-256 fetched once (OpenSSL 3 looks an implicit EVP_sha256() up again on
// every init). A failed fetch throws and is retried by the next call.
const EVP_MD* sha256_md() {
  static const std::unique_ptr<EVP_MD, MdFree> md = [] {
    std::unique_ptr<EVP_MD, MdFree> fetched(EVP_MD_fetch(nullptr, "SHA256", nullptr));
    if (!fetched) fail("EVP_MD_fetch(SHA256)");
    return fetched;
  }();
  return md.get();
}

// An incremental SHA-256: update() any number of times, then finish() once.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_) {
      ERR_clear_error();
      throw std::bad_alloc();
    }
    if (EVP_DigestInit_ex2(ctx_.get(), sha256_md(), nullptr) != 1) fail("EVP_DigestInit_ex2");
  }

  void update(std::span<const uint8_t> bytes) {
    if (bytes.empty()) return;
    if (EVP_DigestUpdate(ctx_.get(), bytes.data(), bytes.size()) != 1) fail("EVP_DigestUpdate");
  }

  Sha256Digest finish() {
    Sha256Digest digest{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &length) != 1) fail("EVP_DigestFinal_ex");
    if (length != digest.size()) throw std::runtime_error("libcrypto: SHA-256 digest of unexpected length");
    return digest;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, MdCtxFree> ctx_;
};

}  // namespace

Sha256Digest sha256(std::span<const uint8_t> bytes) {
  Sha256 hasher;
  hasher.update(bytes);
  return hasher.finish();
}

BlockKey chain_block_key(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens) {
  Sha256 hasher;
  const uint8_t tag = parent ? 0x01 : 0x00;
  hasher.update({&tag, 1});
  const BlockKey zero{};
  const BlockKey& prefix = parent ? *parent : zero;
  hasher.update(prefix);
  // Little-endian bytes whatever the host order, so keys are portable.
  uint8_t bytes[4 * 64];
  size_t n = 0;
  for (int32_t token : tokens) {
    const auto u = static_cast<uint32_t>(token);
    for (int b = 0; b < 4; ++b) bytes[n++] = static_cast<uint8_t>(u >> (8 * b));
    if (n == sizeof(bytes)) {
      hasher.update({bytes, n});
      n = 0;
    }
  }
  hasher.update({bytes, n});
  return hasher.finish();
}

}  // namespace tessera::plugins::memory
