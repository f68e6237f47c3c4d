// SHA-256 against the FIPS 180-4 example vectors, incremental updates, and the
// chained block keys built on it.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "block_key.hpp"
#include "sha256.hpp"

namespace tessera::plugins::paged {
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

TEST(Sha256, MatchesTheFipsExampleVectors) {
  EXPECT_EQ(hex(sha256(bytes_of(""))), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hex(sha256(bytes_of("abc"))), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the padding needs a second block.
  EXPECT_EQ(hex(sha256(bytes_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string million(1000000, 'a');
  EXPECT_EQ(hex(sha256(bytes_of(million))), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, IncrementalUpdatesEqualOneShot) {
  std::string message;
  for (int i = 0; i < 300; ++i) message += static_cast<char>('a' + i % 26);
  const Sha256Digest whole = sha256(bytes_of(message));
  for (size_t chunk : {1u, 3u, 63u, 64u, 65u, 200u}) {
    Sha256 hasher;
    for (size_t i = 0; i < message.size(); i += chunk) {
      hasher.update(bytes_of(std::string_view(message).substr(i, chunk)));
    }
    EXPECT_EQ(hasher.finish(), whole) << "chunks of " << chunk;
  }
  // Lengths 55, 56 and 64 sit on the padding boundaries.
  EXPECT_EQ(hex(sha256(bytes_of(std::string(55, 'a')))),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(hex(sha256(bytes_of(std::string(56, 'a')))),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(hex(sha256(bytes_of(std::string(64, 'a')))),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
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
}  // namespace tessera::plugins::paged
