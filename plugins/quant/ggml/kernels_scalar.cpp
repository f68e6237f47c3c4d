// kernels_scalar.cpp: the portable reference kernels. Every SIMD level is tested
// against these; they are also what a CPU without AVX2 runs.
#include "k_scales.hpp"
#include "low_bit_kquants.hpp"
#include "kernels.hpp"
#include "kquant_groups.hpp"
#include "reference.hpp"
#include "tessera/half.hpp"

namespace tessera::ggml {
namespace {

// The K-quant reference: each super-block is unpacked into one form for all
// five formats, so one plain dot product serves them:
//   w[e] = d * scale(e) * q[e] - dmin * offset(e / 16),  q unsigned,
// and with Q8_K activations x[e] = dx * qx[e] (bsums: sums of qx per 16)
//   dot = dx * (d * sum_e scale(e) q[e] qx[e] - dmin * sum_g offset[g] bsums[g]).
// Q4_K/Q5_K: scale and offset are the 6-bit scale and min of the 32-element
// sub-block, dmin the block's dmin. Q6_K: w = d * sc * (q - 32), so scale is
// the int8 sc of the 16-element sub-block, offset 32 * sc and dmin = d.
// Q2_K and Q3_K: per 16 elements too (unpack_q2_k, unpack_q3_k below).
// The integer sums are exact (|sum| < 2^31: at most 256 * 63 * 127 * 128).
// The SIMD kernels (kernels_avx2.cpp) read the blocks directly instead.

struct KQuantUnpacked {
  alignas(32) uint8_t q[kSuperBlock];          // [256] quants: 0..3, 0..7, 0..15, 0..31 or 0..63
  alignas(32) int16_t scale[kSuperBlock / 2];  // [128] the scale of elements 2p and 2p + 1 (one vpmaddubsw lane)
  alignas(32) int16_t offset[kSuperBlock / 16];  // [16] per group of 16 elements
  float d;
  float dmin;
};

// Q4_K/Q5_K scales and offsets: sub-block j covers elements [32j, 32j + 32),
// i.e. scale lanes [16j, 16j + 16) and offset groups 2j, 2j + 1.
inline void spread_k4_scales(const uint8_t* packed, KQuantUnpacked& u) {
  uint8_t sc[8], mn[8];
  unpack_k4_scales(packed, sc, mn);
  // Written as broadcasts of one value into a run of lanes, which the
  // compiler turns into vector stores (an index p / 16 per lane it did not).
  for (int j = 0; j < 8; ++j) {
    for (int l = 0; l < 16; ++l) u.scale[16 * j + l] = sc[j];
    u.offset[2 * j] = u.offset[2 * j + 1] = mn[j];
  }
}

// Chunk c (0..3) of 64 elements: the low nibbles of qs[32c .. 32c + 31], then their high nibbles.
inline void unpack_q4_k(const void* block, KQuantUnpacked& u) {
  const auto& b = *static_cast<const BlockQ4K*>(block);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      u.q[64 * c + l] = b.qs[32 * c + l] & 0x0F;
      u.q[64 * c + 32 + l] = b.qs[32 * c + l] >> 4;
    }
  }
  spread_k4_scales(b.scales, u);
  u.d = f16_to_f32(b.d);
  u.dmin = f16_to_f32(b.dmin);
}

// As Q4_K, with bit 2c (first 32) or 2c + 1 (last 32) of qh[l] as bit 4.
inline void unpack_q5_k(const void* block, KQuantUnpacked& u) {
  const auto& b = *static_cast<const BlockQ5K*>(block);
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      const int h = b.qh[l] >> (2 * c);
      u.q[64 * c + l] = static_cast<uint8_t>((b.qs[32 * c + l] & 0x0F) | ((h & 1) << 4));
      u.q[64 * c + 32 + l] = static_cast<uint8_t>((b.qs[32 * c + l] >> 4) | ((h & 2) << 3));
    }
  }
  spread_k4_scales(b.scales, u);
  u.d = f16_to_f32(b.d);
  u.dmin = f16_to_f32(b.dmin);
}

// Half h (0, 1) of 128 elements, quarter k (0..3) of 32: low 4 bits from the
// low (k < 2) or high nibble of ql[64h + 32 (k & 1) + l], bits 4..5 from bits
// 2k, 2k + 1 of qh[32h + l]. Element e is in sub-block e / 16.
inline void unpack_q6_k(const void* block, KQuantUnpacked& u) {
  const auto& b = *static_cast<const BlockQ6K*>(block);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    uint8_t* q = u.q + 128 * h;  // [128]
    for (int l = 0; l < 32; ++l) {
      q[l] = static_cast<uint8_t>((ql[l] & 0x0F) | ((qh[l] & 3) << 4));
      q[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4));
      q[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      q[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
  for (int g = 0; g < kSuperBlock / 16; ++g) {
    for (int l = 0; l < 8; ++l) u.scale[8 * g + l] = b.scales[g];
    u.offset[g] = static_cast<int16_t>(32 * b.scales[g]);
  }
  u.d = f16_to_f32(b.d);
  u.dmin = u.d;
}

// Q2_K: sub-block s (16 elements, 16s..16s + 15) holds 2-bit quants at shift
// 2 ((s % 8) / 2) of qs[32 (s / 8) + 16 (s % 2) + l]; so the 32 elements
// from 128h + 32j are bits 2j, 2j + 1 of qs[32h .. 32h + 31].
// w = d * (sc & 15) * q - dmin * (sc >> 4): scale and offset per 16.
inline void unpack_q2_k(const void* block, KQuantUnpacked& u) {
  const auto& b = *static_cast<const BlockQ2K*>(block);
  for (int e = 0; e < kSuperBlock; ++e) u.q[e] = static_cast<uint8_t>(low_two_bits(b.qs, e));
  for (int g = 0; g < kSuperBlock / 16; ++g) {
    for (int l = 0; l < 8; ++l) u.scale[8 * g + l] = b.scales[g] & 0x0F;
    u.offset[g] = b.scales[g] >> 4;
  }
  u.d = f16_to_f32(b.d);
  u.dmin = f16_to_f32(b.dmin);
}

// Q3_K: as Q2_K's two low bits, and bit e / 32 of hmask[e % 32] as bit 2:
// q = 0..7 and w = d * sc * (q - 4) with sc the signed 6-bit scale of the
// 16 (q3_k_scale, low_bit_kquants.hpp), so offset 4 * sc and dmin = d, as Q6_K.
inline void unpack_q3_k(const void* block, KQuantUnpacked& u) {
  const auto& b = *static_cast<const BlockQ3K*>(block);
  for (int e = 0; e < kSuperBlock; ++e) {
    u.q[e] = static_cast<uint8_t>(low_two_bits(b.qs, e) | q3_k_third_bit(b.hmask, e) << 2);
  }
  for (int g = 0; g < kSuperBlock / 16; ++g) {
    const int sc = q3_k_scale(b.scales, g);
    for (int l = 0; l < 8; ++l) u.scale[8 * g + l] = static_cast<int16_t>(sc);
    u.offset[g] = static_cast<int16_t>(4 * sc);
  }
  u.d = f16_to_f32(b.d);
  u.dmin = u.d;
}

using UnpackFn = void (*)(const void* block, KQuantUnpacked& u);

// One unpacked weight super-block against one Q8_K block.
float dot_kquant_block(const KQuantUnpacked& u, const BlockQ8K& x) {
  int32_t sum = 0;
  for (int e = 0; e < kSuperBlock; ++e) sum += u.scale[e / 2] * u.q[e] * x.qs[e];
  int32_t off = 0;
  for (int g = 0; g < kSuperBlock / 16; ++g) off += u.offset[g] * x.bsums[g];
  return x.d * (u.d * static_cast<float>(sum) - u.dmin * static_cast<float>(off));
}

template <UnpackFn Unpack, size_t BlockBytes>
void kquant_tile(const void* w, size_t w_row_bytes, int nw, const BlockQ8K* x, size_t x_row_blocks, int nx,
                 int64_t nb, float* y, size_t y_stride) {
  KQuantUnpacked u;
  for (int wi = 0; wi < nw; ++wi) {
    const uint8_t* row = static_cast<const uint8_t*>(w) + wi * w_row_bytes;
    float acc[kMaxTileX] = {};
    for (int64_t b = 0; b < nb; ++b) {
      Unpack(row + b * BlockBytes, u);
      for (int xi = 0; xi < nx; ++xi) acc[xi] += dot_kquant_block(u, x[xi * x_row_blocks + b]);
    }
    for (int xi = 0; xi < nx; ++xi) y[xi * y_stride + wi] = acc[xi];
  }
}

// Integer dot of one block: sum of q_w[j] * q_x[j] over the block's 32 elements,
// with q_w already mapped to its signed/unsigned integer value.
float dot_q4_0_block(const BlockQ4_0& w, const BlockQ8_1& x) {
  int sum = 0;
  for (int j = 0; j < kBlock / 2; ++j) {
    sum += ((w.qs[j] & 0x0F) - 8) * x.qs[j];
    sum += ((w.qs[j] >> 4) - 8) * x.qs[j + kBlock / 2];
  }
  return f16_to_f32(w.d) * f16_to_f32(x.d) * static_cast<float>(sum);
}

// x_w = d q + m, so sum(x_w * x_a) = d d_a sum(q q_a) + m * (d_a sum(q_a)) = ... + m * s.
float dot_q4_1_block(const BlockQ4_1& w, const BlockQ8_1& x) {
  int sum = 0;
  for (int j = 0; j < kBlock / 2; ++j) {
    sum += (w.qs[j] & 0x0F) * x.qs[j];
    sum += (w.qs[j] >> 4) * x.qs[j + kBlock / 2];
  }
  return f16_to_f32(w.d) * f16_to_f32(x.d) * static_cast<float>(sum) +
         f16_to_f32(w.m) * f16_to_f32(x.s);
}

// Bit 4 of element j is bit j of qh (blocks.hpp).
int q5_high_bit(const uint8_t* qh, int j) { return ((qh[j / 8] >> (j % 8)) & 1) << 4; }

float dot_q5_0_block(const BlockQ5_0& w, const BlockQ8_1& x) {
  int sum = 0;
  for (int j = 0; j < kBlock / 2; ++j) {
    sum += (((w.qs[j] & 0x0F) | q5_high_bit(w.qh, j)) - 16) * x.qs[j];
    sum += (((w.qs[j] >> 4) | q5_high_bit(w.qh, j + kBlock / 2)) - 16) * x.qs[j + kBlock / 2];
  }
  return f16_to_f32(w.d) * f16_to_f32(x.d) * static_cast<float>(sum);
}

// As Q4_1: the m * sum(x) term is m * s.
float dot_q5_1_block(const BlockQ5_1& w, const BlockQ8_1& x) {
  int sum = 0;
  for (int j = 0; j < kBlock / 2; ++j) {
    sum += ((w.qs[j] & 0x0F) | q5_high_bit(w.qh, j)) * x.qs[j];
    sum += ((w.qs[j] >> 4) | q5_high_bit(w.qh, j + kBlock / 2)) * x.qs[j + kBlock / 2];
  }
  return f16_to_f32(w.d) * f16_to_f32(x.d) * static_cast<float>(sum) + f16_to_f32(w.m) * f16_to_f32(x.s);
}

float dot_q8_0_block(const BlockQ8_0& w, const BlockQ8_1& x) {
  int sum = 0;
  for (int j = 0; j < kBlock; ++j) sum += w.qs[j] * x.qs[j];
  return f16_to_f32(w.d) * f16_to_f32(x.d) * static_cast<float>(sum);
}

template <typename Block, float (*DotBlock)(const Block&, const BlockQ8_1&)>
void tile(const void* w, size_t w_row_bytes, int nw, const BlockQ8_1* x, size_t x_row_blocks,
          int nx, int64_t nb, float* y, size_t y_stride) {
  for (int xi = 0; xi < nx; ++xi) {
    const BlockQ8_1* xr = x + xi * x_row_blocks;
    for (int wi = 0; wi < nw; ++wi) {
      const auto* wr = reinterpret_cast<const Block*>(static_cast<const uint8_t*>(w) + wi * w_row_bytes);
      float sum = 0.0f;
      for (int64_t b = 0; b < nb; ++b) sum += DotBlock(wr[b], xr[b]);
      y[xi * y_stride + wi] = sum;
    }
  }
}

float dot_f32(const void* w, const float* x, int64_t n) {
  const auto* wf = static_cast<const float*>(w);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += wf[i] * x[i];
  return sum;
}

float dot_f16(const void* w, const float* x, int64_t n) {
  const auto* wh = static_cast<const uint16_t*>(w);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += f16_to_f32(wh[i]) * x[i];
  return sum;
}

float dot_bf16(const void* w, const float* x, int64_t n) {
  const auto* wh = static_cast<const uint16_t*>(w);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += bf16_to_f32(wh[i]) * x[i];
  return sum;
}

// A block-format row with f32 activations: each block dequantized by the
// reference, then summed in dot_f32's order (one running sum).
template <DType Format, typename Block>
float dot_blocks_f32(const void* w, const float* x, int64_t n) {
  const auto* blocks = static_cast<const Block*>(w);
  float weights[kBlock];
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kBlock; ++b) {
    dequantize_row(Format, &blocks[b], weights, kBlock);
    for (int j = 0; j < kBlock; ++j) sum += weights[j] * x[b * kBlock + j];
  }
  return sum;
}

void f32_tile(const float* w, size_t w_stride, int nw, const float* x, size_t x_stride, int nx, int64_t n, float* y,
              size_t y_stride) {
  for (int xi = 0; xi < nx; ++xi)
    for (int wi = 0; wi < nw; ++wi) y[xi * y_stride + wi] = dot_f32(w + wi * w_stride, x + xi * x_stride, n);
}

// Repacked groups, read straight from the layouts described in blocks.hpp
// (R rows, chunk k of qs holding bytes 4r..4r+3 for row r), with the
// per-block arithmetic of the plain tiles (dot_q4_0_block, dot_q4_1_block,
// dot_q5_0_block, dot_q5_1_block), so a group equals them bit for bit. The
// nibble layouts: Q4_0/Q4_1 and Q5_0/Q5_1 (kHighBits: the fifth bit of each
// quant from the chunk masks qh), 8 or 16 rows; without a minimum (kMin) the
// quants are offset by half their range (Q4_0: q - 8, Q5_0: q - 16). The
// reference reads the scales from the blocks themselves, not from xs.
template <typename Group, int R, bool kHighBits, bool kMin>
void nibble_group(const void* group, int64_t nb, const BlockQ8_1* x, const ActivationScales* /*xs*/,
                  size_t x_row_blocks, int nx, float* y, size_t y_stride, StreamAhead /*ahead*/) {
  using Blocks = GroupBlocks<Group>;
  const int offset = kMin ? 0 : kHighBits ? 16 : 8;
  for (int xi = 0; xi < nx; ++xi) {
    for (int r = 0; r < R; ++r) {
      float sum = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const BlockQ8_1& xb = x[xi * x_row_blocks + b];
        int isum = 0;
        for (int k = 0; k < 4; ++k) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t byte = Blocks::qs(group, nb, b)[4 * R * k + 4 * r + i];
            int lo = byte & 0x0F, hi = byte >> 4;
            if constexpr (kHighBits) {
              const auto* qh = Blocks::block(group, b).qh;
              lo |= static_cast<int>(((qh[k] >> (4 * r + i)) & 1) << 4);
              hi |= static_cast<int>(((qh[4 + k] >> (4 * r + i)) & 1) << 4);
            }
            isum += (lo - offset) * xb.qs[4 * k + i] + (hi - offset) * xb.qs[16 + 4 * k + i];
          }
        }
        const float d = f16_to_f32(Blocks::d(group, nb, b)[r]);
        if constexpr (kMin) {
          const float m = f16_to_f32(Blocks::block(group, b).m[r]);
          sum += d * f16_to_f32(xb.d) * static_cast<float>(isum) + m * f16_to_f32(xb.s);
        } else {
          sum += d * f16_to_f32(xb.d) * static_cast<float>(isum);
        }
      }
      y[xi * y_stride + r] = sum;
    }
  }
}

// Block b of an 8-row Q8_0 group: signed quants, one block after another.
struct Q8_0x8Layout {
  static constexpr int kRows = kRepackRows;
  static constexpr int kOffset = 0;
  static const uint16_t* d(const void* g, int64_t /*nb*/, int64_t b) { return static_cast<const BlockQ8_0x8*>(g)[b].d; }
  static const uint8_t* qs(const void* g, int64_t /*nb*/, int64_t b) {
    return reinterpret_cast<const uint8_t*>(static_cast<const BlockQ8_0x8*>(g)[b].qs);
  }
};

// Block b of a 16-row Q8_0 group: quants stored as q + 128, blocks in pairs
// and a lone last block when nb is odd (blocks.hpp, whose accessors the
// VNNI kernels and the AMX panels read it through too).
struct Q8_0x16Layout : GroupBlocks<BlockQ8_0x16Pair> {
  static constexpr int kRows = kWideRepackRows;
  static constexpr int kOffset = 128;
};

template <typename Layout>
void q8_0_group(const void* group, int64_t nb, const BlockQ8_1* x, const ActivationScales* /*xs*/,
                size_t x_row_blocks, int nx, float* y, size_t y_stride, StreamAhead /*ahead*/) {
  constexpr int R = Layout::kRows;
  for (int xi = 0; xi < nx; ++xi) {
    for (int r = 0; r < R; ++r) {
      float sum = 0.0f;
      for (int64_t b = 0; b < nb; ++b) {
        const BlockQ8_1& xb = x[xi * x_row_blocks + b];
        const uint8_t* qs = Layout::qs(group, nb, b);
        int isum = 0;
        for (int k = 0; k < 8; ++k) {
          for (int i = 0; i < 4; ++i) {
            const uint8_t byte = qs[4 * R * k + 4 * r + i];
            const int q = Layout::kOffset != 0 ? byte - Layout::kOffset : static_cast<int8_t>(byte);
            isum += q * xb.qs[4 * k + i];
          }
        }
        sum += f16_to_f32(Layout::d(group, nb, b)[r]) * f16_to_f32(xb.d) * static_cast<float>(isum);
      }
      y[xi * y_stride + r] = sum;
    }
  }
}

#include "activation_row_impl.hpp"

}  // namespace

const KernelTable& scalar_kernel_table() {
  static const KernelTable table{
      IsaLevel::scalar,
      "scalar",
      4,
      &quantize_row_q8_1,
      &tile<BlockQ4_0, dot_q4_0_block>,
      &tile<BlockQ4_1, dot_q4_1_block>,
      &tile<BlockQ8_0, dot_q8_0_block>,
      &dot_f32,
      &dot_f16,
      &dot_bf16,
      &nibble_group<BlockQ4_1x8, kRepackRows, false, true>,
      &q8_0_group<Q8_0x8Layout>,
      &nibble_group<BlockQ4_1x16, kWideRepackRows, false, true>,
      &q8_0_group<Q8_0x16Layout>,
      &dot_blocks_f32<DType::q4_0, BlockQ4_0>,
      &dot_blocks_f32<DType::q4_1, BlockQ4_1>,
      &dot_blocks_f32<DType::q8_0, BlockQ8_0>,
      &f32_tile,
      &tile<BlockQ5_0, dot_q5_0_block>,
      &tile<BlockQ5_1, dot_q5_1_block>,
      &kquant_tile<unpack_q4_k, sizeof(BlockQ4K)>,
      &kquant_tile<unpack_q5_k, sizeof(BlockQ5K)>,
      &kquant_tile<unpack_q6_k, sizeof(BlockQ6K)>,
      &nibble_group<BlockQ5_0x16, kWideRepackRows, true, false>,
      &nibble_group<BlockQ5_1x16, kWideRepackRows, true, true>,
      &nibble_group<BlockQ5_0x8, kRepackRows, true, false>,
      &nibble_group<BlockQ5_1x8, kRepackRows, true, true>,
      &quantize_row_q8_k,
      &q4_kx8_scalar,
      &q6_kx8_scalar,
      &q5_kx8_scalar,
      nullptr, nullptr, nullptr,  // K-quant panels: the amx level's only
      &kquant_tile<unpack_q2_k, sizeof(BlockQ2K)>,
      &kquant_tile<unpack_q3_k, sizeof(BlockQ3K)>,
      &q2_kx8_scalar,
      &q3_kx8_scalar,
      nullptr, nullptr, nullptr, nullptr, nullptr,  // K-quant pairs: the groups are the reference
      nullptr, nullptr,  // f16/bf16 tiles: rows widened into scratch for f32_tile instead
      &nibble_group<BlockQ4_0x8, kRepackRows, false, false>,
      &nibble_group<BlockQ4_0x16, kWideRepackRows, false, false>,
      &activation_row::quantize_row<&quantize_row_q8_1>,

      nullptr, nullptr, nullptr, nullptr, nullptr,  // block panels: the amx level's
  };
  return table;
}

}  // namespace tessera::ggml
