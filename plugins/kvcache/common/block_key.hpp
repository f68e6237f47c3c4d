// Prefix-cache keys: a chained SHA-256 over full blocks of tokens.
//
// key(block 0) = SHA-256(tag 0x00 || zeros[32]    || tokens of block 0)
// key(block i) = SHA-256(tag 0x01 || key(block i-1) || tokens of block i)
// Tokens are written as 4-byte little-endian integers. Chaining makes a key
// name the whole prefix up to and including its block, so the same block of
// tokens after a different parent never matches. The tag byte keeps a first
// block from ever colliding with a child whose parent key happens to be zero.
//
// SHA-256 comes from OpenSSL's libcrypto (the EVP digest API). When libcrypto
// fails (it allocates), these functions throw std::bad_alloc or
// std::runtime_error; the cache's noexcept methods catch them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace tessera::plugins::memory {

using Sha256Digest = std::array<uint8_t, 32>;
using BlockKey = Sha256Digest;

// The SHA-256 digest of `bytes`, through the same libcrypto wrapper the keys use.
Sha256Digest sha256(std::span<const uint8_t> bytes);

// The key of a full block holding `tokens`, after the block keyed `parent`
// (nullopt for the first block of a sequence).
BlockKey chain_block_key(const std::optional<BlockKey>& parent, std::span<const int32_t> tokens);

// For unordered containers: a SHA-256 digest is already uniformly spread, so
// its first 8 bytes are as good a bucket hash as any.
struct BlockKeyHash {
  size_t operator()(const BlockKey& key) const noexcept {
    uint64_t h = 0;
    std::memcpy(&h, key.data(), sizeof(h));
    return static_cast<size_t>(h);
  }
};

}  // namespace tessera::plugins::memory
