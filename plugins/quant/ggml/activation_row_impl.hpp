// activation_row_impl.hpp: KernelTable::quantize_activation_row, written once
// in plain C++ and included by each level's translation unit (inside its
// anonymous namespace), so the loops are vectorized with that level's
// instructions around its own quantize_q8_1 (the scalar level's is
// reference.cpp's quantize_row_q8_1). Every level gives the same bits: the
// floating-point steps are spelled out in a fixed order.
//
// The includer has included kernels.hpp, and <immintrin.h> where F16C is on
// (tessera/half.hpp where it is off), before its anonymous namespace.
#pragma once

namespace activation_row {

#if defined(__F16C__)
inline float widen(uint16_t h) { return _cvtsh_ss(h); }
inline uint16_t narrow(float f) { return _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#else
inline float widen(uint16_t h) { return tessera::f16_to_f32(h); }
inline uint16_t narrow(float f) { return tessera::f32_to_f16(f); }
#endif

// The sum of a block's 32 floats in double, in one fixed order (lanes j and
// j + 8, + 16, + 24, then a tree over the 8 lanes), then rounded to f32: the
// same bits at every level (exact, and so rounded once, unless the block's
// values span more than ~2^24 in magnitude).
inline float block_sum(const float* x) {
  double lane[8];
  for (int j = 0; j < 8; ++j) {
    lane[j] = (static_cast<double>(x[j]) + static_cast<double>(x[j + 8])) +
              (static_cast<double>(x[j + 16]) + static_cast<double>(x[j + 24]));
  }
  return static_cast<float>(((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7])));
}

inline int32_t quant_sum(const int8_t* qs) {
  int32_t sum = 0;
  for (int j = 0; j < tessera::ggml::kBlock; ++j) sum += qs[j];
  return sum;
}

// KernelTable::quantize_activation_row (kernels.hpp), with Quantize this
// level's quantize_q8_1.
template <void (*Quantize)(const float*, tessera::ggml::BlockQ8_1*, int64_t)>
void quantize_row(const float* x, int64_t n, int terms, int32_t excess, tessera::ggml::BlockQ8_1* q,
                  tessera::ggml::ActivationScales* scales) {
  using tessera::ggml::kBlock;
  const int64_t nb = n / kBlock;
  Quantize(x, q, n);
  // The second term's input a few blocks at a time: the quantizer's wide
  // loads of a residual just written by narrower stores cannot be forwarded
  // from the store buffer, and block by block that stall took a third of this
  // function (perf, Zen 5).
  constexpr int64_t kChunkBlocks = 8;
  float r[kChunkBlocks * kBlock];
  for (int64_t b0 = 0; terms == 2 && b0 < nb; b0 += kChunkBlocks) {
    const int64_t blocks = nb - b0 < kChunkBlocks ? nb - b0 : kChunkBlocks;
    for (int64_t b = b0; b < b0 + blocks; ++b) {
      const float* xb = x + b * kBlock;
      const float d = widen(q[b].d);
      // d * q is exact in f32 (an 11-bit d times a 7-bit q), so r is x's own
      // rounding left out, rounded once.
      float* rb = r + (b - b0) * kBlock;
      for (int j = 0; j < kBlock; ++j) rb[j] = xb[j] - d * static_cast<float>(q[b].qs[j]);
    }
    Quantize(r, q + nb + b0, blocks * kBlock);
    // The minimum's sum (activation_terms.hpp): the ggml-layout tiles read an
    // f16 s per term, so the two terms carry the exact sum's f16 rounding and
    // what that rounding left out; the repacked kernels read the sum itself.
    for (int64_t b = b0; b < b0 + blocks; ++b) {
      const float sum = block_sum(x + b * kBlock);
      q[b].s = narrow(sum);
      q[nb + b].s = narrow(sum - widen(q[b].s));
      if (scales != nullptr) {
        scales[b].s = sum;
        scales[nb + b].s = 0.0f;
      }
    }
  }
  if (scales == nullptr) return;
  for (int64_t b = 0; b < terms * nb; ++b) {
    scales[b].d = widen(q[b].d);
    if (terms == 1) scales[b].s = widen(q[b].s);
    scales[b].q_offset = excess != 0 ? -excess * quant_sum(q[b].qs) : 0;
  }
}

}  // namespace activation_row
