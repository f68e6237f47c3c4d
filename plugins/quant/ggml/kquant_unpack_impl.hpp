// kquant_unpack_impl.hpp: a Q4_K/Q5_K/Q6_K super-block spread out for the
// integer kernels (KernelTable::q4_k, q5_k, q6_k), included inside the
// anonymous namespace of each kernel translation unit (kernels_scalar.cpp,
// kernels_avx2.cpp), so each gets its own copy built with its own flags.
//
// All three formats become one form, so one dot product serves them:
//   w[e] = d * scale(e) * q[e] - dmin * offset(e / 16),  q unsigned,
// and with Q8_K activations x[e] = dx * qx[e] (bsums: sums of qx per 16)
//   dot = dx * (d * sum_e scale(e) q[e] qx[e] - dmin * sum_g offset[g] bsums[g]).
// Q4_K/Q5_K: scale and offset are the 6-bit scale and min of the 32-element
// sub-block, dmin the block's dmin. Q6_K: w = d * sc * (q - 32), so scale is
// the int8 sc of the 16-element sub-block, offset 32 * sc and dmin = d.
// The integer sums are exact (|sum| < 2^31: at most 256 * 63 * 127 * 128).
//
// The includer provides f16(uint16_t) -> float with internal linkage (the
// SDK's inline f16_to_f32 must not be compiled into a -mavx2 translation unit).

struct KQuantUnpacked {
  alignas(32) uint8_t q[kSuperBlock];          // [256] quants: 0..15, 0..31 or 0..63
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
  u.d = f16(b.d);
  u.dmin = f16(b.dmin);
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
  u.d = f16(b.d);
  u.dmin = f16(b.dmin);
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
  u.d = f16(b.d);
  u.dmin = u.d;
}

using UnpackFn = void (*)(const void* block, KQuantUnpacked& u);
