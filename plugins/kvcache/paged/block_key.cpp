#include "block_key.hpp"

namespace tessera::plugins::paged {

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

}  // namespace tessera::plugins::paged
