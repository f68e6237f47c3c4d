// repack_kquant.cpp: 8 rows of Q2_K / Q3_K / Q4_K / Q5_K / Q6_K super-blocks
// into BlockQ2Kx8 / ... / BlockQ6Kx8 (layouts in blocks.hpp). Run once per weight at load.
#include <cstring>

#include "k_scales.hpp"
#include "low_bit_kquants.hpp"
#include "repack.hpp"

namespace tessera::ggml {
namespace {

// Quant e (0..255) of a ggml Q4_K or Q5_K block: sub-block j = e / 32 is
// the low (j even) or high nibbles of qs[32 (j / 2) ..]; Q5_K adds bit j of
// qh[e % 32] as bit 4.
template <typename Block>
int k4_quant(const Block& b, int e) {
  const int j = e / 32, p = e % 32;
  const uint8_t byte = b.qs[32 * (j / 2) + p];
  const int low = j % 2 == 0 ? byte & 0x0F : byte >> 4;
  if constexpr (requires { b.qh; }) return low | ((b.qh[p] >> j) & 1) << 4;
  return low;
}

// Q4_K / Q5_K rows into BlockQ4Kx8 / BlockQ5Kx8 (the latter with its fifth bits).
template <typename Block, typename Group>
void repack_k4_rows(const Block* src, int64_t rows, int64_t nb, Group* dst) {
  constexpr bool kFifthBits = requires(Group& out) { out.qh; };
  for (int64_t g = 0; g < rows / kRepackRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      Group& out = dst[g * nb + b];
      if constexpr (kFifthBits) std::memset(out.qh, 0, sizeof out.qh);
      for (int r = 0; r < kRepackRows; ++r) {
        const Block& in = src[(g * kRepackRows + r) * nb + b];
        out.d[r] = in.d;
        out.dmin[r] = in.dmin;
        uint8_t sc[8], mn[8];
        unpack_k4_scales(in.scales, sc, mn);
        for (int j = 0; j < 8; ++j) {
          out.scales[j][r] = sc[j];
          out.mins[j][r] = mn[j];
          for (int t = 0; t < 4; ++t) {
            for (int i = 0; i < 4; ++i) {
              const int lo = k4_quant(in, 32 * j + 4 * t + i), hi = k4_quant(in, 32 * j + 16 + 4 * t + i);
              out.qs[j][t][4 * r + i] = static_cast<uint8_t>((lo & 0x0F) | (hi & 0x0F) << 4);
              if constexpr (kFifthBits) out.qh[j][4 * r + i] |= static_cast<uint8_t>((lo >> 4) << t | (hi >> 4) << (4 + t));
            }
          }
        }
      }
    }
  }
}

// Quant e (0..63) of a ggml Q6_K block: half h of 128, quarter k of 32, l
// within it: low bits from ql[64h + 32 (k & 1) + l] (low nibble for k < 2),
// high bits from bits 2k..2k+1 of qh[32h + l].
int q6_k_quant(const BlockQ6K& b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t low = b.ql[64 * h + 32 * (k & 1) + l];
  const int lo4 = k < 2 ? low & 0x0F : low >> 4;
  const int hi2 = (b.qh[32 * h + l] >> (2 * k)) & 3;
  return lo4 | hi2 << 4;
}

// Q2_K and Q3_K: the two low bits of every quant of row r into the qs order
// both layouts share (BlockQ2Kx8); out.qs zeroed by the caller.
template <typename Block, typename Group>
void repack_low_two_bits(const Block& in, int r, Group& out) {
  for (int s = 0; s < 16; ++s) {
    for (int t = 0; t < 4; ++t) {
      for (int i = 0; i < 4; ++i)
        out.qs[s][4 * r + i] |= static_cast<uint8_t>(low_two_bits(in.qs, 16 * s + 4 * t + i) << (2 * t));
    }
  }
}

}  // namespace

void repack_q4_kx8(const BlockQ4K* src, int64_t rows, int64_t nb, BlockQ4Kx8* dst) {
  repack_k4_rows(src, rows, nb, dst);
}

void repack_q5_kx8(const BlockQ5K* src, int64_t rows, int64_t nb, BlockQ5Kx8* dst) {
  repack_k4_rows(src, rows, nb, dst);
}

void repack_q6_kx8(const BlockQ6K* src, int64_t rows, int64_t nb, BlockQ6Kx8* dst) {
  for (int64_t g = 0; g < rows / kRepackRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ6Kx8& out = dst[g * nb + b];
      std::memset(out.qh, 0, sizeof out.qh);
      for (int r = 0; r < kRepackRows; ++r) {
        const BlockQ6K& in = src[(g * kRepackRows + r) * nb + b];
        out.d[r] = in.d;
        for (int j = 0; j < 8; ++j) {
          out.scales[j][r][0] = in.scales[2 * j];
          out.scales[j][r][1] = in.scales[2 * j + 1];
          for (int t = 0; t < 4; ++t) {
            const int v = t % 2;
            for (int i = 0; i < 4; ++i) {
              const int a = q6_k_quant(in, 32 * j + 4 * t + i), c = q6_k_quant(in, 32 * j + 16 + 4 * t + i);
              out.ql[j][t][4 * r + i] = static_cast<uint8_t>((a & 0x0F) | (c & 0x0F) << 4);
              out.qh[j][t / 2][4 * r + i] |= static_cast<uint8_t>((a >> 4) << (2 * v) | (c >> 4) << (4 + 2 * v));
            }
          }
        }
      }
    }
  }
}

void repack_q2_kx8(const BlockQ2K* src, int64_t rows, int64_t nb, BlockQ2Kx8* dst) {
  for (int64_t g = 0; g < rows / kRepackRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ2Kx8& out = dst[g * nb + b];
      std::memset(out.qs, 0, sizeof out.qs);
      for (int r = 0; r < kRepackRows; ++r) {
        const BlockQ2K& in = src[(g * kRepackRows + r) * nb + b];
        out.d[r] = in.d;
        out.dmin[r] = in.dmin;
        for (int s = 0; s < 16; ++s) out.scales[s / 2][r][s % 2] = in.scales[s];
        repack_low_two_bits(in, r, out);
      }
    }
  }
}

void repack_q3_kx8(const BlockQ3K* src, int64_t rows, int64_t nb, BlockQ3Kx8* dst) {
  for (int64_t g = 0; g < rows / kRepackRows; ++g) {
    for (int64_t b = 0; b < nb; ++b) {
      BlockQ3Kx8& out = dst[g * nb + b];
      std::memset(out.qs, 0, sizeof out.qs);
      std::memset(out.hmask, 0, sizeof out.hmask);
      for (int r = 0; r < kRepackRows; ++r) {
        const BlockQ3K& in = src[(g * kRepackRows + r) * nb + b];
        out.d[r] = in.d;
        for (int s = 0; s < 16; ++s) {
          out.scales[s / 2][r][s % 2] = static_cast<int8_t>(q3_k_scale(in.scales, s));
          for (int t = 0; t < 4; ++t) {
            for (int i = 0; i < 4; ++i) {
              const int bit = q3_k_third_bit(in.hmask, 16 * s + 4 * t + i);
              out.hmask[s / 2][4 * r + i] |= static_cast<uint8_t>(bit << (4 * (s % 2) + t));
            }
          }
        }
        repack_low_two_bits(in, r, out);
      }
    }
  }
}

size_t kquant_x8_block_bytes(DType type) {
  switch (type) {
    case DType::q2_k: return sizeof(BlockQ2Kx8);
    case DType::q3_k: return sizeof(BlockQ3Kx8);
    case DType::q4_k: return sizeof(BlockQ4Kx8);
    case DType::q5_k: return sizeof(BlockQ5Kx8);
    default: return sizeof(BlockQ6Kx8);
  }
}

void repack_kquant_x8(DType type, const void* src, int64_t rows, int64_t nb, void* dst) {
  switch (type) {
    case DType::q2_k:
      repack_q2_kx8(static_cast<const BlockQ2K*>(src), rows, nb, static_cast<BlockQ2Kx8*>(dst));
      break;
    case DType::q3_k:
      repack_q3_kx8(static_cast<const BlockQ3K*>(src), rows, nb, static_cast<BlockQ3Kx8*>(dst));
      break;
    case DType::q4_k:
      repack_q4_kx8(static_cast<const BlockQ4K*>(src), rows, nb, static_cast<BlockQ4Kx8*>(dst));
      break;
    case DType::q5_k:
      repack_q5_kx8(static_cast<const BlockQ5K*>(src), rows, nb, static_cast<BlockQ5Kx8*>(dst));
      break;
    default:
      repack_q6_kx8(static_cast<const BlockQ6K*>(src), rows, nb, static_cast<BlockQ6Kx8*>(dst));
  }
}

}  // namespace tessera::ggml
