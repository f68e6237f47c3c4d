// The chained block keys: the documented byte string hashed with SHA-256
// (libcrypto, through the plugin's wrapper), checked against digests computed
// independently (Python's hashlib), and keys that must differ.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "block_key.hpp"

namespace tessera::plugins::memory {
namespace {

std::string hex(const Sha256Digest& d) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : d) {
    s += digits[b >> 4];
    s += digits[b & 15];
  }
  return s;
}

std::span<const uint8_t> bytes_of(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The byte string block_key.hpp documents, built here by hand.
std::vector<uint8_t> documented_bytes(const std::optional<BlockKey>& parent, const std::vector<int32_t>& tokens) {
  std::vector<uint8_t> bytes;
  bytes.push_back(parent ? 0x01 : 0x00);
  for (uint8_t b : parent.value_or(BlockKey{})) bytes.push_back(b);
  for (int32_t token : tokens) {
    const auto u = static_cast<uint32_t>(token);
    bytes.push_back(static_cast<uint8_t>(u));
    bytes.push_back(static_cast<uint8_t>(u >> 8));
    bytes.push_back(static_cast<uint8_t>(u >> 16));
    bytes.push_back(static_cast<uint8_t>(u >> 24));
  }
  return bytes;
}

TEST(Sha256, TheWrapperGivesTheFipsExampleDigests) {
  EXPECT_EQ(hex(sha256(bytes_of("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hex(sha256(bytes_of(""))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(BlockKey, IsSha256OfTheDocumentedBytes) {
  const std::vector<int32_t> first{1, 2, 3, 4};
  // Negative and large tokens: their two's-complement bytes, little-endian.
  const std::vector<int32_t> second{5, -1, 256, 0x7fffffff};
  std::vector<int32_t> long_block;  // longer than the key's staging buffer (64 tokens)
  for (int32_t i = 0; i < 200; ++i) long_block.push_back(i * 7919 - 100000);

  const BlockKey k0 = chain_block_key(std::nullopt, first);
  const BlockKey k1 = chain_block_key(k0, second);
  const BlockKey k2 = chain_block_key(k1, long_block);
  EXPECT_EQ(k0, sha256(documented_bytes(std::nullopt, first)));
  EXPECT_EQ(k1, sha256(documented_bytes(k0, second)));
  EXPECT_EQ(k2, sha256(documented_bytes(k1, long_block)));
  // The same keys from hashlib.sha256 over the same bytes.
  EXPECT_EQ(hex(k0), "ea9f51347a4c6baf0765ac59fa29bf636770e54ec1a9ae6082a20fe54716fceb");
  EXPECT_EQ(hex(k1), "65b4ff102504f1b60c4aef65ea80b7245fa6cb21a2b0daee8555e9e013ad374a");
  EXPECT_EQ(hex(k2), "27130fcb84bab1edbd431c1256f35103f99c6063af7ea24ef93366f61eff45c3");
}

TEST(BlockKey, DependsOnTheTokensAndTheWholeChainBeforeThem) {
  const std::vector<int32_t> a{1, 2, 3, 4}, b{1, 2, 3, 5}, c{9, 9, 9, 9};
  const BlockKey root_a = chain_block_key(std::nullopt, a);
  EXPECT_EQ(root_a, chain_block_key(std::nullopt, a)) << "deterministic";
  EXPECT_NE(root_a, chain_block_key(std::nullopt, b));
  // The same tokens after different parents are different keys.
  const BlockKey after_a = chain_block_key(root_a, c);
  const BlockKey after_b = chain_block_key(chain_block_key(std::nullopt, b), c);
  EXPECT_NE(after_a, after_b);
  EXPECT_NE(after_a, chain_block_key(std::nullopt, c));
  // A first block never equals a child of an all-zero parent key.
  EXPECT_NE(chain_block_key(std::nullopt, c), chain_block_key(BlockKey{}, c));
  // Token bytes are fixed-width: {1, 256} and {256, 1} differ.
  EXPECT_NE(chain_block_key(std::nullopt, std::vector<int32_t>{1, 256}),
            chain_block_key(std::nullopt, std::vector<int32_t>{256, 1}));
  // Blocks longer than the key's internal staging buffer (64 tokens).
  std::vector<int32_t> long_block(200, 7), long_other(200, 7);
  long_other[150] = 8;
  EXPECT_NE(chain_block_key(std::nullopt, long_block), chain_block_key(std::nullopt, long_other));
}

}  // namespace
}  // namespace tessera::plugins::memory
