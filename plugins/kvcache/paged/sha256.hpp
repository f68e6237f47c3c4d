// SHA-256 (FIPS 180-4, section 6.2), written for the prefix cache's block keys.
//
// A small incremental hasher: update() any number of times, then finish().
// Only what the cache needs; tested against the FIPS 180-4 example vectors.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace tessera::plugins::paged {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  void update(std::span<const uint8_t> bytes);
  // Pads, processes the last block(s) and returns the digest. The hasher must
  // not be used again afterwards.
  Sha256Digest finish();

 private:
  void compress(const uint8_t* block);  // one 64-byte block

  std::array<uint32_t, 8> state_;  // H0..H7
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;      // bytes waiting in buffer_
  uint64_t total_bytes_ = 0;  // message length so far
};

// The digest of one whole message.
Sha256Digest sha256(std::span<const uint8_t> bytes);

}  // namespace tessera::plugins::paged
