// int8_peak_amx.cpp: the AMX panels' product (int8_peak.hpp): tdpbusd
// multiplies a 16 x 64 tile of u8 by a 16 x 64 tile of i8 (16 x 16 x 64
// products) into a 16 x 16 tile of i32 sums. Four accumulator tiles, each its
// own chain, from two A and two B tiles, as the panels' inner loop.
#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "int8_peak.hpp"
#include "tessera/amx_tiles.hpp"

namespace tessera::ggml {

int64_t int8_peak_amx(int64_t rounds) {
  alignas(64) static int8_t operand[16][64];
  std::memset(operand, 1, sizeof operand);
  configure_16x64_tiles();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  tile_memory_fence();  // operand is read by tile loads
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (int64_t r = 0; r < rounds; ++r) {
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  alignas(64) static int32_t result[16][16];
  _tile_stored(0, result, 64);
  tile_memory_fence();  // result was written by a tile store
  _tile_release();
  volatile int32_t sink = result[0][0];
  (void)sink;
  return rounds * 4 * 16 * 16 * 64;
}

}  // namespace tessera::ggml
