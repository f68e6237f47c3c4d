// blocks.hpp: ggml's quantized block layouts, byte for byte as they sit in a GGUF file.
//
// Plain structs only (no inline functions): this header is included by the
// SIMD translation units, which are compiled with extra -m flags, and an inline
// function emitted there could be merged by the linker into generic code.
//
// Every block covers a run of consecutive elements of one row. Scales are IEEE
// half (f16) bit patterns. Nibble order in the 4-bit formats: element j of the
// block (j < 16) is the low nibble of qs[j], element j + 16 its high nibble.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tessera::ggml {

inline constexpr int kBlock = 32;     // elements per Q4_0/Q4_1/Q8_0/Q8_1 block
inline constexpr int kSuperBlock = 256;  // elements per K-quant super-block

// x = d * (q - 8), q in 0..15.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kBlock / 2];
};

// x = d * q + m, q in 0..15.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kBlock / 2];
};

// x = d * (q - 16), q in 0..31: bit 4 of element j's q is bit j of the
// little-endian 32-bit qh, its low 4 bits a nibble of qs in Q4_0's order
// (element j < 16 in the low nibble of qs[j], element j + 16 in the high one).
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kBlock / 2];
};

// x = d * q + m, q in 0..31, bits laid out as in BlockQ5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kBlock / 2];
};

// x = d * q, q in -127..127.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kBlock];
};

// Activations: x = d * q, and s = d * sum(q) so that a weight format with a
// per-block minimum (Q4_1) gets its m * sum(x) term without a second pass.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kBlock];
};

// 8 sub-blocks of 32: x = d * sc[i] * q - dmin * mn[i], q in 0..15; sc and mn
// are 6-bit values packed into `scales` (see reference.cpp, k4_scale_min).
// qs holds 4 chunks of 64 elements: chunk c's first 32 elements are the low
// nibbles of qs[32c .. 32c+31], its last 32 the high nibbles.
struct BlockQ4K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qs[kSuperBlock / 2];
};

// As Q4_K with a fifth bit: q in 0..31. Bit (2c) of qh[l] is the high bit of
// element l of chunk c's first half, bit (2c + 1) that of element l of its second half.
struct BlockQ5K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[12];
  uint8_t qh[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 2];
};

// 16 sub-blocks of 16: x = d * scales[i] * (q - 32), q in 0..63 (4 low bits
// in ql, 2 high bits in qh).
struct BlockQ6K {
  uint8_t ql[kSuperBlock / 2];
  uint8_t qh[kSuperBlock / 4];
  int8_t scales[kSuperBlock / 16];
  uint16_t d;
};

// Q2_K and Q3_K: 16 sub-blocks of 16 elements. Element e keeps its low two
// bits in qs[32 (e / 128) + e % 32], at bits 2j and 2j + 1 with
// j = (e % 128) / 32. Q2_K: w = d * sc * q - dmin * mn with q in 0..3 and
// sub-block s's sc and mn the low and high nibbles of scales[s].
struct BlockQ2K {
  uint8_t scales[kSuperBlock / 16];
  uint8_t qs[kSuperBlock / 4];
  uint16_t d;     // f16
  uint16_t dmin;  // f16
};

// Q3_K: w = d * (sc - 32) * (q - 4 * (1 - hbit)), q the two low bits, hbit
// bit 4 (e / 128) + j of hmask[e % 32]. The 6-bit sc of sub-block s: low four
// bits in the low (s < 8) or high nibble of scales[s % 8], high two bits at
// bits 2 (s / 4) of scales[8 + s % 4].
struct BlockQ3K {
  uint8_t hmask[kSuperBlock / 8];
  uint8_t qs[kSuperBlock / 4];
  uint8_t scales[12];
  uint16_t d;  // f16
};

static_assert(sizeof(BlockQ2K) == 84 && sizeof(BlockQ3K) == 110, "ggml's Q2_K and Q3_K sizes");

// Activations for the K-quant formats: a super-block of 256, x = d * q with
// d = max|x| / 127 in f32, and bsums[g] = sum of q over elements [16g, 16g + 16)
// (the kernels remove Q4_K/Q5_K's minimum and Q6_K's - 32 through them).
struct BlockQ8K {
  float d;
  int8_t qs[kSuperBlock];
  int16_t bsums[kSuperBlock / 16];
};

// Repacked layouts (ours, not ggml's): the same block of 8 consecutive rows,
// interleaved so that one 32-byte load holds 4 consecutive quants of each of
// the 8 rows. A SIMD kernel then keeps row r in i32 lane r and multiplies by a
// broadcast group of 4 activation quants (vpdpbusd / vpmaddubsw), with no
// horizontal sums and the 8 rows' scales loaded by one vector load.
// A matrix of R rows (R a multiple of 8) is R / 8 groups, each group nb
// consecutive repacked blocks. Same byte count as the ggml layout.
inline constexpr int kRepackRows = 8;

// Chunk k (0..3) of qs: bytes 4r..4r+3 are bytes 4k..4k+3 of row r's ggml qs,
// i.e. quants 4k..4k+3 (low nibbles) and 16+4k..16+4k+3 (high nibbles).
struct BlockQ4_1x8 {
  uint16_t d[kRepackRows];
  uint16_t m[kRepackRows];
  uint8_t qs[kRepackRows * kBlock / 2];
};

// Q5_0 and Q5_1, 8 rows (the AVX2 and AVX-512 kernels without VNNI): qs as
// BlockQ4_1x8, and the fifth bits as one 32-bit byte mask per chunk, laid
// out as in the 16-row layouts below (bit 4r + i of qh[k]: quant 4k + i of
// row r; of qh[4 + k]: quant 16 + 4k + i).
struct BlockQ5_0x8 {
  uint16_t d[kRepackRows];
  uint32_t qh[8];
  uint8_t qs[kRepackRows * kBlock / 2];
};
struct BlockQ5_1x8 {
  uint16_t d[kRepackRows];
  uint16_t m[kRepackRows];
  uint32_t qh[8];
  uint8_t qs[kRepackRows * kBlock / 2];
};

// Chunk k (0..7) of qs: bytes 4r..4r+3 are quants 4k..4k+3 of row r.
struct BlockQ8_0x8 {
  uint16_t d[kRepackRows];
  int8_t qs[kRepackRows * kBlock];
};

// The wide layouts, for AVX-512 VNNI: 16 rows, so one 64-byte load holds 4
// consecutive quants of each of 16 rows and one zmm vpdpbusd does 64
// multiply-adds. With 8 rows a kernel needs twice the broadcasts, loads and
// scale steps per multiply-add; the zmm kernels ran 13-17% faster for 8
// activation rows (docs/kernels.md). Chunk k of qs: bytes 4r..4r+3 as in the
// 8-row layouts, for r < 16.
inline constexpr int kWideRepackRows = 16;

struct BlockQ4_1x16 {
  uint16_t d[kWideRepackRows];
  uint16_t m[kWideRepackRows];
  uint8_t qs[kWideRepackRows * kBlock / 2];
};

// Q4_0 (w = d (q - 8)), R = 8 or 16 rows: BlockQ4_1x8/x16 without the
// minimums, 18 bytes a row-block as in the ggml layout. A group of nb blocks
// is nb / 2 pairs, then one lone block when nb is odd (as the 16-row Q8_0
// layout): one 16-row block is 288 bytes, so laid one after another every
// other block's 64-byte loads would straddle two cache lines (streamed on
// one core: 28 GB/s against Q4_1's 39 with its 320-byte blocks); a pair is 9
// whole lines with both blocks' quants on line boundaries (8 rows: 32-byte
// boundaries, those of their 32-byte loads) when the group starts on one,
// i.e. for even nb (a group is R · nb · 18 bytes). Holding all of a group's
// scales before its quants aligned them too, but streamed slower still (17
// GB/s at AVX2).
template <int R>
struct BlockQ4_0Rows {
  uint16_t d[R];
  uint8_t qs[R * kBlock / 2];
};
template <int R>
struct BlockQ4_0Pair {
  uint16_t d[2][R];
  uint8_t qs[2][R * kBlock / 2];
};
using BlockQ4_0x8 = BlockQ4_0Pair<kRepackRows>;
using BlockQ4_0x16 = BlockQ4_0Pair<kWideRepackRows>;

// Where block b of a group of nb repacked blocks keeps its scales and quants,
// for the nibble kernels: the Q4_1 and Q5 layouts above are arrays of Group,
// the Q4_0 ones pairs and a lone block.
template <typename Group>
struct GroupBlocks {
  static constexpr size_t kBlockBytes = sizeof(Group);  // what one block takes in the stream
  static const Group& block(const void* g, int64_t b) { return static_cast<const Group*>(g)[b]; }
  static const uint16_t* d(const void* g, int64_t /*nb*/, int64_t b) { return block(g, b).d; }
  static const uint8_t* qs(const void* g, int64_t /*nb*/, int64_t b) { return block(g, b).qs; }
};
template <int R>
struct GroupBlocks<BlockQ4_0Pair<R>> {
  static constexpr size_t kBlockBytes = sizeof(BlockQ4_0Pair<R>) / 2;
  static const uint16_t* d(const void* g, int64_t nb, int64_t b) {
    const auto* pairs = static_cast<const BlockQ4_0Pair<R>*>(g);
    return b / 2 < nb / 2 ? pairs[b / 2].d[b % 2] : reinterpret_cast<const BlockQ4_0Rows<R>*>(pairs + nb / 2)->d;
  }
  static const uint8_t* qs(const void* g, int64_t nb, int64_t b) {
    const auto* pairs = static_cast<const BlockQ4_0Pair<R>*>(g);
    return b / 2 < nb / 2 ? pairs[b / 2].qs[b % 2] : reinterpret_cast<const BlockQ4_0Rows<R>*>(pairs + nb / 2)->qs;
  }
};

// Q5_0 and Q5_1 in the 16-row layout: qs exactly as BlockQ4_1x16 (byte
// 4r + i of chunk k holds quant 4k + i of row r in its low nibble and quant
// 16 + 4k + i in its high nibble, which in the ggml layout is byte 4k + i of
// the row's qs), and the fifth bits as byte masks for those chunks: bit
// 4r + i of qh[k] is bit 4 of quant 4k + i of row r, bit 4r + i of qh[4 + k]
// that of quant 16 + 4k + i. A kernel ORs 16 into the unpacked nibbles with
// one masked move per 64 quants.
struct BlockQ5_0x16 {
  uint16_t d[kWideRepackRows];
  uint64_t qh[8];
  uint8_t qs[kWideRepackRows * kBlock / 2];
};
struct BlockQ5_1x16 {
  uint16_t d[kWideRepackRows];
  uint16_t m[kWideRepackRows];
  uint64_t qh[8];
  uint8_t qs[kWideRepackRows * kBlock / 2];
};

// Quants stored as q + 128 (0..255; bit 7 flipped), the unsigned operand of
// vpdpbusd, so the kernel needs no vpsignb (which has no 512-bit form). The
// kernel subtracts 128 * sum(x quants) of each block (ActivationScales::q_offset).
// A group of nb blocks is stored as nb / 2 pairs, then one BlockQ8_0x16 if nb
// is odd: a block is 544 bytes, so every other block's quants would start 32
// bytes into a cache line and each 64-byte load would touch two lines (6%
// slower streaming the output matrix); a pair is 17 whole lines with both
// blocks' quants on line boundaries.
struct BlockQ8_0x16 {
  uint16_t d[kWideRepackRows];
  uint8_t qs[kWideRepackRows * kBlock];
};
struct BlockQ8_0x16Pair {
  uint16_t d[2][kWideRepackRows];
  uint8_t qs[2][kWideRepackRows * kBlock];
};
// Where block b of a 16-row Q8_0 group of nb blocks keeps its scales and quants.
template <>
struct GroupBlocks<BlockQ8_0x16Pair> {
  static constexpr size_t kBlockBytes = sizeof(BlockQ8_0x16Pair) / 2;
  static const uint16_t* d(const void* g, int64_t nb, int64_t b) {
    const auto* pairs = static_cast<const BlockQ8_0x16Pair*>(g);
    return b / 2 < nb / 2 ? pairs[b / 2].d[b % 2] : reinterpret_cast<const BlockQ8_0x16*>(pairs + nb / 2)->d;
  }
  static const uint8_t* qs(const void* g, int64_t nb, int64_t b) {
    const auto* pairs = static_cast<const BlockQ8_0x16Pair*>(g);
    return b / 2 < nb / 2 ? pairs[b / 2].qs[b % 2] : reinterpret_cast<const BlockQ8_0x16*>(pairs + nb / 2)->qs;
  }
};

// The K-quants, 8 rows (repack_kquant.cpp; kernels in kquant_groups_*.cpp).
// A super-block of 8 rows is split into 8 runs of 32 elements, j = 0..7. For
// each run the layout keeps the bytes a kernel needs together: 32-byte chunks
// of quants that hold 4 consecutive quants of each of the 8 rows (row r at
// bytes 4r..4r+3, as in BlockQ4_1x8), so a broadcast group of 4 activation
// quants multiplies all 8 rows at once and row r's sums stay in lanes 2r and
// 2r + 1 of an i16 vector until one vpmaddwd applies the rows' scales.
//
// Q4_K: run j is sub-block j. Chunk t (0..3) of run j: the low nibble of byte
// 4r + i is quant 32j + 4t + i of row r, the high nibble quant 32j + 16 + 4t + i.
// The 6-bit scales and minimums are unpacked to bytes, [j][r]. 1184 bytes
// against the ggml layout's 8 x 144 = 1152 (the unpacked scales).
struct BlockQ4Kx8 {
  uint16_t d[kRepackRows];             // f16
  uint16_t dmin[kRepackRows];          // f16
  uint8_t scales[8][kRepackRows];      // [j][r] 0..63
  uint8_t mins[8][kRepackRows];        // [j][r] 0..63
  uint8_t qs[8][4][4 * kRepackRows];   // [j][t][4r + i]
};

// Q5_K: BlockQ4Kx8 and the fifth bits: bit t of byte 4r + i of qh[j] is bit 4
// of chunk t's low-nibble quant (32j + 4t + i of row r), bit 4 + t that of its
// high-nibble quant (32j + 16 + 4t + i). 1440 bytes against 8 x 176 = 1408.
struct BlockQ5Kx8 {
  uint16_t d[kRepackRows];             // f16
  uint16_t dmin[kRepackRows];          // f16
  uint8_t scales[8][kRepackRows];      // [j][r] 0..63
  uint8_t mins[8][kRepackRows];        // [j][r] 0..63
  uint8_t qs[8][4][4 * kRepackRows];   // [j][t][4r + i], as BlockQ4Kx8
  uint8_t qh[8][4 * kRepackRows];      // [j][4r + i]
};

// Q6_K: run j is sub-blocks 2j (its first 16 elements) and 2j + 1. Low four
// bits as in Q4_K: chunk t of ql[j], low nibble of byte 4r + i = quant 32j + 4t + i
// (sub-block 2j), high nibble = quant 32j + 16 + 4t + i (sub-block 2j + 1). The
// two high bits of the quants of chunk t = 2u + v are in qh[j][u], byte 4r + i:
// bits 2v..2v+1 those of the low-nibble quant, bits 4+2v..5+2v those of the
// high-nibble one. scales[j][r] = (scale of sub-block 2j, of 2j + 1) of row r:
// one sign-extending load gives the pairs a vpmaddwd with the activations'
// sums per 16 needs. Same byte count as 8 ggml blocks.
struct BlockQ6Kx8 {
  uint8_t ql[8][4][4 * kRepackRows];   // [j][t][4r + i]
  uint8_t qh[8][2][4 * kRepackRows];   // [j][u][4r + i]
  int8_t scales[8][kRepackRows][2];    // [j][r][sub-block 2j, 2j + 1]
  uint16_t d[kRepackRows];             // f16
};

// Q2_K: sub-block s (elements 16s..16s + 15) is one 32-byte chunk: bits
// 2t, 2t + 1 of byte 4r + i hold quant 16s + 4t + i of row r (t = 0..3), so
// four shifts of one load give four chunks of 4 quants per row, each against
// a broadcast group of 4 activation quants. scales[j][r][h]: row r's scale
// byte of sub-block 2j + h as stored (scale in the low nibble, minimum in the
// high): one zero-extending load gives the pairs a vpmaddwd with the
// activations' sums per 16 needs. Same byte count as 8 ggml blocks.
struct BlockQ2Kx8 {
  uint8_t qs[16][4 * kRepackRows];     // [s][4r + i]
  uint8_t scales[8][kRepackRows][2];   // [j][r][sub-block 2j, 2j + 1]
  uint16_t d[kRepackRows];             // f16
  uint16_t dmin[kRepackRows];          // f16
};

// Q3_K: the two low bits as BlockQ2Kx8's qs; the third bit of quant
// 16s + 4t + i of row r is bit t (s = 2j) or 4 + t (s = 2j + 1) of byte
// 4r + i of hmask[j]. scales[j][r][h]: the signed 6-bit scale of sub-block
// 2j + h (-32..31). 912 bytes against 8 x 110 = 880 (the unpacked scales).
struct BlockQ3Kx8 {
  uint8_t qs[16][4 * kRepackRows];     // [s][4r + i]
  uint8_t hmask[8][4 * kRepackRows];   // [j][4r + i]
  int8_t scales[8][kRepackRows][2];    // [j][r][sub-block 2j, 2j + 1]
  uint16_t d[kRepackRows];             // f16
};

static_assert(sizeof(BlockQ4_1x8) == 8 * sizeof(BlockQ4_1));
static_assert(sizeof(BlockQ4_1x16) == 16 * sizeof(BlockQ4_1));
static_assert(sizeof(BlockQ5_0x8) == 8 * sizeof(BlockQ5_0));
static_assert(sizeof(BlockQ5_1x8) == 8 * sizeof(BlockQ5_1));
static_assert(sizeof(BlockQ5_0x16) == 16 * sizeof(BlockQ5_0));
static_assert(sizeof(BlockQ5_1x16) == 16 * sizeof(BlockQ5_1));
static_assert(sizeof(BlockQ8_0x16) == 16 * sizeof(BlockQ8_0));
static_assert(sizeof(BlockQ8_0x16Pair) == 2 * sizeof(BlockQ8_0x16) && sizeof(BlockQ8_0x16Pair) % 64 == 0);
static_assert(sizeof(BlockQ8_0x8) == 8 * sizeof(BlockQ8_0));
static_assert(sizeof(BlockQ4_0Rows<kRepackRows>) == 8 * sizeof(BlockQ4_0));
static_assert(sizeof(BlockQ4_0Rows<kWideRepackRows>) == 16 * sizeof(BlockQ4_0));
static_assert(sizeof(BlockQ4_0x8) == 16 * sizeof(BlockQ4_0) && offsetof(BlockQ4_0x8, qs) % 32 == 0);
static_assert(sizeof(BlockQ4_0x16) == 32 * sizeof(BlockQ4_0) && sizeof(BlockQ4_0x16) % 64 == 0 &&
              offsetof(BlockQ4_0x16, qs) % 64 == 0);
static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ4K) == 144);
static_assert(sizeof(BlockQ5K) == 176);
static_assert(sizeof(BlockQ6K) == 210);
static_assert(sizeof(BlockQ8K) == 292);
static_assert(offsetof(BlockQ6K, d) == 208);
static_assert(sizeof(BlockQ4Kx8) == 1184 && offsetof(BlockQ4Kx8, qs) % 32 == 0);
static_assert(sizeof(BlockQ2Kx8) == 8 * sizeof(BlockQ2K) && sizeof(BlockQ3Kx8) == 912);
static_assert(sizeof(BlockQ6Kx8) == 8 * sizeof(BlockQ6K));
static_assert(sizeof(BlockQ5Kx8) == 1440 && offsetof(BlockQ5Kx8, qs) == offsetof(BlockQ4Kx8, qs));

}  // namespace tessera::ggml
