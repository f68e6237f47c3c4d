// paged_block_ops_avx2.cpp: the explicit AVX2 loops of the paged kernel
// (declared in paged_block_ops_x86.hpp), compiled for the avx2 level alone
// (tessera_isa_sources in CMakeLists.txt); paged_block_ops.cpp calls them
// only where tessera/isa.hpp says the CPU runs that level.
#include "paged_x86_intrinsics.hpp"

#if TESSERA_PAGED_X86

namespace tessera::plugins::paged_attention::x86 {

[[gnu::always_inline]] inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
[[gnu::always_inline]] inline __m256 load8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Lane t of the result is the sum of all lanes of v[t] (the tree of
// sum_lanes16_avx512 on 8 vectors of 8).
[[gnu::always_inline]] inline __m256 sum_lanes8_avx2(const __m256 (&v)[8]) {
  __m256 pairs[4];  // per 128-bit lane: v[2i], v[2i+1], v[2i], v[2i+1]
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {
    pairs[i] = _mm256_add_ps(_mm256_unpacklo_ps(v[2 * i], v[2 * i + 1]), _mm256_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  }
  __m256 quads[2];  // 128-bit lane L: the sums of lane L of v[4i], ..., v[4i + 3]
#pragma GCC unroll 2
  for (int i = 0; i < 2; ++i) {
    const __m256d a = _mm256_castps_pd(pairs[2 * i]), b = _mm256_castps_pd(pairs[2 * i + 1]);
    quads[i] = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(a, b)), _mm256_castpd_ps(_mm256_unpackhi_pd(a, b)));
  }
  // 0x20: the low 128-bit lanes of both operands; 0x31: the high ones.
  return _mm256_add_ps(_mm256_permute2f128_ps(quads[0], quads[1], 0x20),
                       _mm256_permute2f128_ps(quads[0], quads[1], 0x31));
}

// Adds the slice d of one query row times the same slice of key rows
// k + t * stride, t < 8 (t < count unless kFull), to acc[t].
template <bool kFull, typename KvT>
[[gnu::always_inline]] inline void dots8_slice_avx2(const float* q_row, const KvT* k, int64_t stride, int32_t d,
                                          int32_t count, __m256 (&acc)[8]) {
  const __m256 qv = _mm256_loadu_ps(q_row + d);
#pragma GCC unroll 8
  for (int32_t t = 0; t < 8; ++t) {
    if (kFull || t < count) acc[t] = _mm256_fmadd_ps(qv, load8(k + t * stride + d), acc[t]);
  }
}

// Partial dot products of one query row with 8 key rows (the others 0).
// Sixteen ymm registers cannot hold a query of 64 beside 8 accumulators, so
// each query slice is loaded once for all 8 rows.
template <int32_t kDim, bool kFull, typename KvT>
[[gnu::always_inline]] inline void dots8_avx2(const float* q_row, const KvT* k, int64_t stride, int32_t head_dim, int32_t count,
                                    __m256 (&acc)[8]) {
#pragma GCC unroll 8
  for (int32_t t = 0; t < 8; ++t) acc[t] = _mm256_setzero_ps();
  if constexpr (kDim > 0) {
#pragma GCC unroll 16
    for (int32_t d = 0; d < kDim; d += 8) dots8_slice_avx2<kFull>(q_row, k, stride, d, count, acc);
  } else {
    for (int32_t d = 0; d < head_dim; d += 8) dots8_slice_avx2<kFull>(q_row, k, stride, d, count, acc);
  }
}

template <int32_t kDim, typename KvT>
[[gnu::always_inline]] inline void group_scores_avx2_loop(const float* __restrict q, int32_t n_q, const KvT* __restrict k,
                                                int64_t stride, int32_t head_dim, int32_t n, float* __restrict s,
                                                int32_t ld_s) {
  const int32_t D = kDim > 0 ? kDim : head_dim;
  int32_t t0 = 0;
  for (; t0 + 8 <= n; t0 += 8) {
    for (int32_t g = 0; g < n_q; ++g) {
      const KvT* k_block = k + t0 * stride;
      asm volatile("" : "+r"(k_block));  // keeps the block's loads inside the loop, as in the AVX-512 one
      __m256 acc[8];
      dots8_avx2<kDim, true>(q + static_cast<int64_t>(g) * D, k_block, stride, D, 8, acc);
      _mm256_storeu_ps(s + static_cast<int64_t>(g) * ld_s + t0, sum_lanes8_avx2(acc));
    }
  }
  if (t0 == n) return;
  const int32_t count = n - t0;  // 1..7 keys left
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(count), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int32_t g = 0; g < n_q; ++g) {
    const KvT* k_block = k + t0 * stride;
    asm volatile("" : "+r"(k_block));
    __m256 acc[8];
    dots8_avx2<kDim, false>(q + static_cast<int64_t>(g) * D, k_block, stride, D, count, acc);
    _mm256_maskstore_ps(s + static_cast<int64_t>(g) * ld_s + t0, mask, sum_lanes8_avx2(acc));
  }
}

template <typename KvT>
[[gnu::always_inline]] inline void group_scores_avx2_any(const float* q, int32_t n_q, const KvT* k, int64_t stride,
                                               int32_t head_dim, int32_t n, float* s, int32_t ld_s) {
  switch (head_dim) {
    case 64: return group_scores_avx2_loop<64>(q, n_q, k, stride, head_dim, n, s, ld_s);
    case 128: return group_scores_avx2_loop<128>(q, n_q, k, stride, head_dim, n, s, ld_s);
    default: return group_scores_avx2_loop<0>(q, n_q, k, stride, head_dim, n, s, ld_s);
  }
}
void group_scores_avx2(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim,
                                    int32_t n, float* s, int32_t ld_s) {
  group_scores_avx2_any(q, n_q, k, stride, head_dim, n, s, ld_s);
}
void group_scores_avx2(const float* q, int32_t n_q, const uint16_t* k, int64_t stride, int32_t head_dim,
                                    int32_t n, float* s, int32_t ld_s) {
  group_scores_avx2_any(q, n_q, k, stride, head_dim, n, s, ld_s);
}

// Fused value accumulation (paged_block_ops_x86.hpp).
constexpr int32_t kAvx2PassRows = 4;

// The AVX2 counterpart of accumulate_slice_avx512, slices of 8 kVecs floats.
template <int32_t kRows, int32_t kVecs, typename KvT>
[[gnu::always_inline]] inline void accumulate_slice_avx2(const float* __restrict p, int64_t ld_p, const float* correction,
                                               const ValueRunOf<KvT>* runs, int32_t n_runs, int64_t stride,
                                               int32_t head_dim,
                                               int32_t d, float* __restrict acc) {
  __m256 a[kRows][kVecs];
#pragma GCC unroll 4
  for (int32_t g = 0; g < kRows; ++g) {
    const __m256 c = _mm256_set1_ps(correction[g]);
#pragma GCC unroll 2
    for (int32_t j = 0; j < kVecs; ++j) {
      a[g][j] = _mm256_mul_ps(_mm256_loadu_ps(acc + static_cast<int64_t>(g) * head_dim + d + 8 * j), c);
    }
  }
  const float* w = p;  // weight of the current key for row 0; row g's is w[g * ld_p]
  for (int32_t r = 0; r < n_runs; ++r) {
    const KvT* v_row = runs[r].v + d;
    for (int32_t t = 0; t < runs[r].n; ++t, ++w, v_row += stride) {
      __m256 v[kVecs];  // the V slice, loaded once for every row
#pragma GCC unroll 2
      for (int32_t j = 0; j < kVecs; ++j) {
        __m256 x = load8(v_row + 8 * j);
        asm("" : "+x"(x));  // in a register, as in accumulate_slice_avx512
        v[j] = x;
      }
#pragma GCC unroll 4
      for (int32_t g = 0; g < kRows; ++g) {
        const __m256 weight = _mm256_set1_ps(w[g * ld_p]);
#pragma GCC unroll 2
        for (int32_t j = 0; j < kVecs; ++j) a[g][j] = _mm256_fmadd_ps(weight, v[j], a[g][j]);
      }
    }
  }
#pragma GCC unroll 4
  for (int32_t g = 0; g < kRows; ++g) {
#pragma GCC unroll 2
    for (int32_t j = 0; j < kVecs; ++j) _mm256_storeu_ps(acc + static_cast<int64_t>(g) * head_dim + d + 8 * j, a[g][j]);
  }
}

template <int32_t kRows, typename KvT>
[[gnu::always_inline]] inline void accumulate_pass_avx2(const float* p, int64_t ld_p, const float* correction,
                                              const ValueRunOf<KvT>* runs, int32_t n_runs, int64_t stride,
                                              int32_t head_dim,
                                              float* acc) {
  int32_t d = 0;
  for (; d + 16 <= head_dim; d += 16) {
    accumulate_slice_avx2<kRows, 2>(p, ld_p, correction, runs, n_runs, stride, head_dim, d, acc);
  }
  if (d < head_dim) accumulate_slice_avx2<kRows, 1>(p, ld_p, correction, runs, n_runs, stride, head_dim, d, acc);
}

template <typename KvT>
[[gnu::always_inline]] inline void accumulate_pass_avx2(int32_t rows, const float* p, int64_t ld_p, const float* correction,
                                              const ValueRunOf<KvT>* runs, int32_t n_runs, int64_t stride,
                                              int32_t head_dim,
                                              float* acc) {
  switch (rows) {
    case 1: return accumulate_pass_avx2<1, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
    case 2: return accumulate_pass_avx2<2, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
    case 3: return accumulate_pass_avx2<3, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
    default: return accumulate_pass_avx2<4, KvT>(p, ld_p, correction, runs, n_runs, stride, head_dim, acc);
  }
}

template <typename KvT>
[[gnu::always_inline]] inline void accumulate_group_avx2_any(const float* p, int64_t ld_p, int32_t n_rows,
                                                   const float* correction, const ValueRunOf<KvT>* runs,
                                                   int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  for (int32_t g = 0; g < n_rows; g += kAvx2PassRows) {
    accumulate_pass_avx2(std::min(kAvx2PassRows, n_rows - g), p + g * ld_p, ld_p, correction + g, runs, n_runs, stride,
                         head_dim, acc + static_cast<int64_t>(g) * head_dim);
  }
}
void accumulate_group_avx2(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                                        const ValueRun* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                                        float* acc) {
  accumulate_group_avx2_any(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}
void accumulate_group_avx2(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                                        const ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                                        float* acc) {
  accumulate_group_avx2_any(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}

// Online softmax with explicit vectors (paged_block_ops_x86.hpp).

[[gnu::always_inline]] inline __m256 exp_nonpositive_avx2(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(kMinArg), x);
  const __m256i n = _mm256_cvttps_epi32(_mm256_fmsub_ps(x, _mm256_set1_ps(kLog2e), _mm256_set1_ps(0.5f)));
  const __m256 fn = _mm256_cvtepi32_ps(n);
  const __m256 r = _mm256_fnmadd_ps(fn, _mm256_set1_ps(kLn2Lo), _mm256_fnmadd_ps(fn, _mm256_set1_ps(kLn2Hi), x));
  __m256 p = _mm256_set1_ps(kPoly[0]);
#pragma GCC unroll 5
  for (int i = 1; i < 6; ++i) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kPoly[i]));
  const __m256 e_r = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
  const __m256 scale = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23));
  return _mm256_mul_ps(e_r, scale);
}

// The sum, or the maximum, of the 8 lanes.
[[gnu::always_inline]] inline float hsum_avx2(__m256 v) {
  __m128 x = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_add_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_add_ss(x, _mm_movehdup_ps(x)));
}
[[gnu::always_inline]] inline float hmax_avx2(__m256 v) {
  __m128 x = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  x = _mm_max_ps(x, _mm_movehl_ps(x, x));
  return _mm_cvtss_f32(_mm_max_ss(x, _mm_movehdup_ps(x)));
}

float softmax_update_avx2(float* __restrict s, int32_t n, float* m, float* l) {
  const int32_t n_full = n / 8 * 8;
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - n_full), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256 tail_ps = _mm256_castsi256_ps(tail);
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 max8 = _mm256_blendv_ps(neg_inf, _mm256_maskload_ps(s + n_full, tail), tail_ps);
  for (int32_t t = 0; t < n_full; t += 8) max8 = _mm256_max_ps(max8, _mm256_loadu_ps(s + t));
  const float m_new = std::max(*m, hmax_avx2(max8));
  const float correction = exp_nonpositive(*m - m_new);
  const __m256 m8 = _mm256_set1_ps(m_new);
  __m256 sum8 = _mm256_setzero_ps();
  for (int32_t t = 0; t < n_full; t += 8) {
    const __m256 e = exp_nonpositive_avx2(_mm256_sub_ps(_mm256_loadu_ps(s + t), m8));
    _mm256_storeu_ps(s + t, e);
    sum8 = _mm256_add_ps(sum8, e);
  }
  if (n_full < n) {
    const __m256 e = exp_nonpositive_avx2(_mm256_sub_ps(_mm256_maskload_ps(s + n_full, tail), m8));
    _mm256_maskstore_ps(s + n_full, tail, e);
    sum8 = _mm256_add_ps(sum8, _mm256_and_ps(e, tail_ps));
  }
  *l = *l * correction + hsum_avx2(sum8);
  *m = m_new;
  return correction;
}

}  // namespace tessera::plugins::paged_attention::x86

#endif  // TESSERA_PAGED_X86
