// k_scales.hpp: the 6-bit sub-block scales and minimums of a Q4_K/Q5_K
// super-block, unpacked from its 12 bytes.
//
// Internal linkage on purpose: this header is included by translation units
// compiled with different -m flags (the AVX2 kernels, the generic code), and
// each must keep its own copy (kernels.hpp explains why).
#pragma once

#include <cstdint>
#include <cstring>

namespace tessera::ggml {
namespace {

// sc[j], mn[j] for sub-blocks j = 0..7 (reference.cpp, k4_scale_min): for
// j < 4, scale = byte j & 63 and min = byte j + 4 & 63; sub-block j + 4 takes
// bits 0..3 from the low (scale) or high (min) nibble of byte j + 8 and bits
// 4..5 from the top two bits of byte j (scale) or j + 4 (min). Done on four
// bytes at a time in little-endian 32-bit words, as the blocks are stored:
// byte by byte it compiled to scalar code with element inserts.
inline void unpack_k4_scales(const uint8_t* scales, uint8_t* sc, uint8_t* mn) {  // scales: [12]; sc, mn: [8]
  uint32_t w0, w4, w8;  // bytes 0..3, 4..7, 8..11
  std::memcpy(&w0, scales, 4);
  std::memcpy(&w4, scales + 4, 4);
  std::memcpy(&w8, scales + 8, 4);
  const uint32_t sc_mn[4] = {
      w0 & 0x3F3F3F3Fu,                                        // scales of sub-blocks 0..3
      (w8 & 0x0F0F0F0Fu) | ((w0 >> 2) & 0x30303030u),         // scales of 4..7
      w4 & 0x3F3F3F3Fu,                                        // mins of 0..3
      ((w8 >> 4) & 0x0F0F0F0Fu) | ((w4 >> 2) & 0x30303030u)};  // mins of 4..7
  std::memcpy(sc, sc_mn, 8);
  std::memcpy(mn, sc_mn + 2, 8);
}

}  // namespace
}  // namespace tessera::ggml
