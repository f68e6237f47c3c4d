// paged_block_ops_avx512.cpp: the explicit AVX-512 loops of the paged kernel
// (declared in paged_block_ops_x86.hpp), compiled for the avx512 level alone
// (tessera_isa_sources in CMakeLists.txt); paged_block_ops.cpp calls them
// only where tessera/isa.hpp says the CPU runs that level.
#include "paged_x86_intrinsics.hpp"

#if TESSERA_PAGED_X86

namespace tessera::plugins::paged_attention::x86 {

[[gnu::always_inline]] inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
[[gnu::always_inline]] inline __m512 load16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The sum, or the maximum, of the 16 lanes (GCC 12's _mm512_reduce_* warn of
// uninitialized values inside their own code).
[[gnu::always_inline]] inline float hsum_avx512(__m512 v) {
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0x4e));  // + the other 256-bit half
  v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, 0xb1));  // + the neighbouring 128-bit lane
  __m128 x = _mm512_castps512_ps128(v);
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}
[[gnu::always_inline]] inline float hmax_avx512(__m512 v) {
  v = _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, 0x4e));
  v = _mm512_max_ps(v, _mm512_shuffle_f32x4(v, v, 0xb1));
  __m128 x = _mm512_castps512_ps128(v);
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}

// Lane t of the result is the sum of all lanes of v[t].
[[gnu::always_inline]] inline __m512 sum_lanes16_avx512(const __m512 (&v)[16]) {
  // pairs[i], in each 128-bit lane: partial sums of v[2i], v[2i+1], v[2i], v[2i+1].
  __m512 pairs[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    pairs[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  }
  // quads[i], 128-bit lane L: the sums of lane L of v[4i], ..., v[4i + 3].
  __m512 quads[4];
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    const __m512d a = _mm512_castps_pd(pairs[2 * i]), b = _mm512_castps_pd(pairs[2 * i + 1]);
    quads[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)), _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  // Adding the 128-bit lanes: 0x88 takes lanes 0 and 2 of each operand, 0xdd lanes 1 and 3.
  // halves[i] lanes: quads[2i] (0 + 1), quads[2i] (2 + 3), quads[2i + 1] (0 + 1), quads[2i + 1] (2 + 3).
  __m512 halves[2];
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {
    halves[i] = _mm512_add_ps(_mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], 0x88),
                              _mm512_shuffle_f32x4(quads[2 * i], quads[2 * i + 1], 0xdd));
  }
  return _mm512_add_ps(_mm512_shuffle_f32x4(halves[0], halves[1], 0x88),
                       _mm512_shuffle_f32x4(halves[0], halves[1], 0xdd));
}

// Partial dot products of one query row with key rows k + t * stride, t < 16
// (t < count unless kFull; the others stay 0). A head_dim known at compile
// time keeps the query in registers and walks the keys one row at a time;
// otherwise each slice of the query is loaded once for all 16 rows.
template <int32_t kDim, bool kFull, typename KvT>
[[gnu::always_inline]] inline void dots16_avx512(const float* q_row, const KvT* k, int64_t stride, int32_t head_dim,
                                         int32_t count, __m512 (&acc)[16]) {
  if constexpr (kDim > 0) {
    __m512 qv[kDim / 16];  // the query row, [head_dim / 16] vectors
#pragma GCC unroll 8
    for (int32_t c = 0; c < kDim / 16; ++c) qv[c] = _mm512_loadu_ps(q_row + 16 * c);
    const KvT* k_row = k;  // [head_dim], row t
#pragma GCC unroll 16
    for (int32_t t = 0; t < 16; ++t) {
      if (!kFull && t >= count) {
        acc[t] = _mm512_setzero_ps();
        continue;
      }
      acc[t] = _mm512_mul_ps(qv[0], load16(k_row));
#pragma GCC unroll 8
      for (int32_t c = 1; c < kDim / 16; ++c) acc[t] = _mm512_fmadd_ps(qv[c], load16(k_row + 16 * c), acc[t]);
      k_row += stride;
    }
  } else {
#pragma GCC unroll 16
    for (int32_t t = 0; t < 16; ++t) acc[t] = _mm512_setzero_ps();
    for (int32_t d = 0; d < head_dim; d += 16) {
      const __m512 qv = _mm512_loadu_ps(q_row + d);
#pragma GCC unroll 16
      for (int32_t t = 0; t < 16; ++t) {
        if (kFull || t < count) acc[t] = _mm512_fmadd_ps(qv, load16(k + t * stride + d), acc[t]);
      }
    }
  }
}

// The products of one query row and one key row, as a vector of partial sums.
template <int32_t kDim, typename KvT>
[[gnu::always_inline]] inline __m512 dot_avx512(const float* q_row, const KvT* k_row, int32_t head_dim) {
  const int32_t D = kDim > 0 ? kDim : head_dim;
  __m512 acc = _mm512_mul_ps(_mm512_loadu_ps(q_row), load16(k_row));
  for (int32_t d = 16; d < D; d += 16) {
    acc = _mm512_fmadd_ps(_mm512_loadu_ps(q_row + d), load16(k_row + d), acc);
  }
  return acc;
}

// A tail of up to this many keys is scored one key at a time: the tree costs
// about 45 instructions however few of its 16 lanes are used, a lone
// reduction about 8 per score.
constexpr int32_t kShortTail = 4;

// Blocks outer, query rows inner: a block's 16 key rows stay in L1 for the
// whole group, and each query row is reloaded once per block.
template <int32_t kDim, typename KvT>
[[gnu::always_inline]] inline void group_scores_avx512_loop(const float* __restrict q, int32_t n_q, const KvT* __restrict k,
                                                    int64_t stride, int32_t head_dim, int32_t n, float* __restrict s,
                                                    int32_t ld_s) {
  const int32_t D = kDim > 0 ? kDim : head_dim;
  int32_t t0 = 0;
  for (; t0 + 16 <= n; t0 += 16) {
    for (int32_t g = 0; g < n_q; ++g) {
      // The key rows do not change with g, and GCC would otherwise load the
      // whole block once before this loop, spilling most of it to the stack.
      const KvT* k_block = k + t0 * stride;
      asm volatile("" : "+r"(k_block));
      __m512 acc[16];
      dots16_avx512<kDim, true>(q + static_cast<int64_t>(g) * D, k_block, stride, D, 16, acc);
      _mm512_storeu_ps(s + static_cast<int64_t>(g) * ld_s + t0, sum_lanes16_avx512(acc));
    }
  }
  if (t0 == n) return;
  const int32_t count = n - t0;  // 1..15 keys left
  if (count <= kShortTail) {
    // Too few for the tree to pay: each score reduced on its own.
    for (int32_t g = 0; g < n_q; ++g) {
      for (int32_t t = t0; t < n; ++t) {
        s[static_cast<int64_t>(g) * ld_s + t] =
            hsum_avx512(dot_avx512<kDim>(q + static_cast<int64_t>(g) * D, k + t * stride, D));
      }
    }
    return;
  }
  // Computed as a block, stored through a mask.
  const auto mask = static_cast<__mmask16>((1u << count) - 1);
  for (int32_t g = 0; g < n_q; ++g) {
    const KvT* k_block = k + t0 * stride;
    asm volatile("" : "+r"(k_block));  // as above
    __m512 acc[16];
    dots16_avx512<kDim, false>(q + static_cast<int64_t>(g) * D, k_block, stride, D, count, acc);
    _mm512_mask_storeu_ps(s + static_cast<int64_t>(g) * ld_s + t0, mask, sum_lanes16_avx512(acc));
  }
}

template <typename KvT>
[[gnu::always_inline]] inline void group_scores_avx512_any(const float* q, int32_t n_q, const KvT* k, int64_t stride,
                                                   int32_t head_dim, int32_t n, float* s, int32_t ld_s) {
  switch (head_dim) {
    case 64: return group_scores_avx512_loop<64>(q, n_q, k, stride, head_dim, n, s, ld_s);
    case 128: return group_scores_avx512_loop<128>(q, n_q, k, stride, head_dim, n, s, ld_s);
    default: return group_scores_avx512_loop<0>(q, n_q, k, stride, head_dim, n, s, ld_s);
  }
}
void group_scores_avx512(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim,
                                        int32_t n, float* s, int32_t ld_s) {
  group_scores_avx512_any(q, n_q, k, stride, head_dim, n, s, ld_s);
}
void group_scores_avx512(const float* q, int32_t n_q, const uint16_t* k, int64_t stride,
                                        int32_t head_dim, int32_t n, float* s, int32_t ld_s) {
  group_scores_avx512_any(q, n_q, k, stride, head_dim, n, s, ld_s);
}

// Fused value accumulation (paged_block_ops_x86.hpp).
constexpr int32_t kAvx512PassRows = 6;

// acc_g[d, d + 16 kVecs) = acc_g * correction[g] + sum_i p_g[i] v_i[d, d + 16 kVecs) for g < kRows,
// with p_g = p + g * ld_p and acc_g = acc + g * head_dim.
template <int32_t kRows, int32_t kVecs, typename KvT>
[[gnu::always_inline]] inline void accumulate_slice_avx512(const float* __restrict p, int64_t ld_p, const float* correction,
                                                   const ValueRunOf<KvT>* runs, int32_t n_runs, int64_t stride,
                                                   int32_t head_dim, int32_t d, float* __restrict acc) {
  __m512 a[kRows][kVecs];
#pragma GCC unroll 8
  for (int32_t g = 0; g < kRows; ++g) {
    const __m512 c = _mm512_set1_ps(correction[g]);
#pragma GCC unroll 4
    for (int32_t j = 0; j < kVecs; ++j) {
      a[g][j] = _mm512_mul_ps(_mm512_loadu_ps(acc + static_cast<int64_t>(g) * head_dim + d + 16 * j), c);
    }
  }
  const float* w = p;  // weight of the current key for row 0; row g's is w[g * ld_p]
  for (int32_t r = 0; r < n_runs; ++r) {
    const KvT* v_row = runs[r].v + d;
    for (int32_t t = 0; t < runs[r].n; ++t, ++w, v_row += stride) {
      __m512 v[kVecs];  // the V slice, loaded once for every row
#pragma GCC unroll 4
      for (int32_t j = 0; j < kVecs; ++j) {
        __m512 x = load16(v_row + 16 * j);
        // In a register: GCC would fold the load into every row's FMA, kRows loads instead of one.
        asm("" : "+v"(x));
        v[j] = x;
      }
#pragma GCC unroll 8
      for (int32_t g = 0; g < kRows; ++g) {
        const __m512 weight = _mm512_set1_ps(w[g * ld_p]);
#pragma GCC unroll 4
        for (int32_t j = 0; j < kVecs; ++j) a[g][j] = _mm512_fmadd_ps(weight, v[j], a[g][j]);
      }
    }
  }
#pragma GCC unroll 8
  for (int32_t g = 0; g < kRows; ++g) {
#pragma GCC unroll 4
    for (int32_t j = 0; j < kVecs; ++j) {
      _mm512_storeu_ps(acc + static_cast<int64_t>(g) * head_dim + d + 16 * j, a[g][j]);
    }
  }
}

// Every slice of head_dim for one pass of `rows` (1..kAvx512PassRows) rows.
template <int32_t kRows, typename KvT>
[[gnu::always_inline]] inline void accumulate_pass_avx512(const float* p, int64_t ld_p, const float* correction,
                                                  const ValueRunOf<KvT>* runs, int32_t n_runs, int64_t stride,
                                                  int32_t head_dim, float* acc) {
  int32_t d = 0;
  for (; d + 64 <= head_dim; d += 64) {
    accumulate_slice_avx512<kRows, 4>(p, ld_p, correction, runs, n_runs, stride, head_dim, d, acc);
  }
  for (; d < head_dim; d += 16) {
    accumulate_slice_avx512<kRows, 1>(p, ld_p, correction, runs, n_runs, stride, head_dim, d, acc);
  }
}

template <typename KvT>
[[gnu::always_inline]] inline void accumulate_pass_avx512(int32_t rows, const float* p, int64_t ld_p, const float* correction,
                                                  const ValueRunOf<KvT>* runs, int32_t n_runs, int64_t stride,
                                                  int32_t head_dim, float* acc) {
  switch (rows) {
    case 1: return accumulate_pass_avx512<1, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
    case 2: return accumulate_pass_avx512<2, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
    case 3: return accumulate_pass_avx512<3, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
    case 4: return accumulate_pass_avx512<4, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
    case 5: return accumulate_pass_avx512<5, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
    default: return accumulate_pass_avx512<6, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
  }
}

template <typename KvT>
[[gnu::always_inline]] inline void accumulate_group_avx512_any(const float* p, int64_t ld_p, int32_t n_rows,
                                                       const float* correction, const ValueRunOf<KvT>* runs,
                                                       int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  for (int32_t g = 0; g < n_rows; g += kAvx512PassRows) {
    accumulate_pass_avx512(std::min(kAvx512PassRows, n_rows - g), p + g * ld_p, ld_p, correction + g, runs, n_runs,
                           stride, head_dim, acc + static_cast<int64_t>(g) * head_dim);
  }
}
void accumulate_group_avx512(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                                            const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                                            float* acc) {
  accumulate_group_avx512_any(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}
void accumulate_group_avx512(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                                            const ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                                            float* acc) {
  accumulate_group_avx512_any(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}

// Online softmax with explicit vectors (paged_block_ops_x86.hpp).

[[gnu::always_inline]] inline __m512 exp_nonpositive_avx512(__m512 x) {
  x = _mm512_max_ps(_mm512_set1_ps(kMinArg), x);  // a NaN x passes: max returns its second operand then
  const __m512i n = _mm512_cvttps_epi32(_mm512_fmsub_ps(x, _mm512_set1_ps(kLog2e), _mm512_set1_ps(0.5f)));
  const __m512 fn = _mm512_cvtepi32_ps(n);
  const __m512 r = _mm512_fnmadd_ps(fn, _mm512_set1_ps(kLn2Lo), _mm512_fnmadd_ps(fn, _mm512_set1_ps(kLn2Hi), x));
  __m512 p = _mm512_set1_ps(kPoly[0]);
#pragma GCC unroll 5
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kPoly[i]));
  const __m512 e_r = _mm512_add_ps(_mm512_fmadd_ps(_mm512_mul_ps(p, r), r, r), _mm512_set1_ps(1.0f));
  const __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23));
  return _mm512_mul_ps(e_r, scale);
}

float softmax_update_avx512(float* __restrict s, int32_t n, float* m, float* l) {
  const int32_t n_full = n / 16 * 16;
  const auto tail = static_cast<__mmask16>((1u << (n - n_full)) - 1);
  const __m512 neg_inf = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  __m512 max16 = _mm512_mask_loadu_ps(neg_inf, tail, s + n_full);
  for (int32_t t = 0; t < n_full; t += 16) max16 = _mm512_max_ps(max16, _mm512_loadu_ps(s + t));
  const float m_new = std::max(*m, hmax_avx512(max16));
  const float correction = exp_nonpositive(*m - m_new);  // ~0 on the first step, where l and acc are 0 anyway
  const __m512 m16 = _mm512_set1_ps(m_new);
  __m512 sum16 = _mm512_setzero_ps();
  for (int32_t t = 0; t < n_full; t += 16) {
    const __m512 e = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_loadu_ps(s + t), m16));
    _mm512_storeu_ps(s + t, e);
    sum16 = _mm512_add_ps(sum16, e);
  }
  if (tail != 0) {
    const __m512 e = exp_nonpositive_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, s + n_full), m16));
    _mm512_mask_storeu_ps(s + n_full, tail, e);
    sum16 = _mm512_mask_add_ps(sum16, tail, sum16, e);
  }
  *l = *l * correction + hsum_avx512(sum16);
  *m = m_new;
  return correction;
}

}  // namespace tessera::plugins::paged_attention::x86

#endif  // TESSERA_PAGED_X86
