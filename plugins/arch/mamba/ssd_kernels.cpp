// ssd_kernels.cpp: Mamba-2's chunked scan (the "state space duality" form of
// Dao & Gu, 2024), compiled once per instruction-set level
// (tessera_isa_variants in CMakeLists.txt; ssm.cpp picks the level).
//
// Per head h and chunk of Q tokens, with a_t = dt_t A[h] <= 0 and
// cum_t = a_0 + ... + a_t (inclusive, within the chunk), the scan's
// recurrence unrolls into matrix products:
//   y_t = e^{cum_t} C_t·S_p            (the state the chunk started from)
//       + sum_{s<=t} e^{cum_t - cum_s} dt_s (C_t·B_s) x_s   (the chunk itself)
//       + D x_t
//   S' = e^{cum_{Q-1}} S + sum_s e^{cum_{Q-1} - cum_s} dt_s x_s B_sᵀ
// Every exponent is <= 0 (cum falls along the chunk), so nothing overflows.
// The products are Eigen's, on this level's instructions; C·Bᵀ is computed
// once per group for the heads of the slice that share it.
#include <cstdint>

#include "ssm_kernels.hpp"
#include "tessera/fast_exp.hpp"

// Eigen's templates, instantiated here with this level's instructions, must
// not merge with another level's copies (the linker keeps one copy of an
// inline function): this level's Eigen gets a namespace of its own, as in
// plugins/quant/ggml/hessian_products_rows.cpp. Called on OpenMP threads
// already: Eigen must not start its own.
#define EIGEN_DONT_PARALLELIZE
#define TESSERA_EIGEN_NAME_(level) Eigen_##level
#define TESSERA_EIGEN_NAME(level) TESSERA_EIGEN_NAME_(level)
#define Eigen TESSERA_EIGEN_NAME(TESSERA_ISA_NAMESPACE)
#include <Eigen/Core>

namespace tessera::mamba::TESSERA_ISA_NAMESPACE {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowsMap = Eigen::Map<const RowMatrix, 0, Eigen::OuterStride<>>;
using MutableRowsMap = Eigen::Map<RowMatrix, 0, Eigen::OuterStride<>>;

// Per-thread product buffers of one chunk, sized on first use. (No
// std::vector here: its out-of-line members would be shared with other
// levels' objects; tests/build/isa_objects_test.py checks.)
struct ChunkWork {
  RowMatrix cb;          // [Q, Q]: C_t·B_s of the group
  RowMatrix mixed;       // [Q, Q]: cb masked to s <= t and weighted per head
  RowMatrix from_state;  // [Q, P]: C_t·S, the chunk's starting state read at each token
  RowMatrix weighted;    // [Q, P]: x_s scaled by e^{cum_{Q-1} - cum_s} dt_s
  RowMatrix y;           // [Q, P]: the chunk's own contribution
};

}  // namespace

void mamba2_chunked_scan_kernel(const Mamba2Scan& s, int64_t n_chunks, int64_t h0, int64_t h1) {
  const int64_t N = s.d_state, P = s.head_dim, Q = kSsdChunk;
  const int64_t heads_per_group = s.n_head / s.n_group;
  thread_local ChunkWork w;
  // Per token of the chunk: dt, the running sum of dt A, e^{cum_t} and
  // e^{cum_{Q-1} - cum_t} dt_t. (Each exp inside a vectorized loop, where
  // exp_nonpositive inlines: a call left out of line would be shared code.)
  float dt[kSsdChunk], cum[kSsdChunk], from_start[kSsdChunk], to_end[kSsdChunk];
  for (int64_t chunk = 0; chunk < n_chunks; ++chunk) {
    const int64_t t0 = chunk * Q;
    int64_t group_done = -1;  // the group whose C·Bᵀ w.cb holds
    for (int64_t h = h0; h < h1; ++h) {
      const int64_t g = h / heads_per_group;
      const RowsMap b(s.b.row(t0) + g * N, Q, N, Eigen::OuterStride<>(s.b.stride));  // [Q, N]
      const RowsMap c(s.c.row(t0) + g * N, Q, N, Eigen::OuterStride<>(s.c.stride));  // [Q, N]
      const RowsMap x(s.x.row(t0) + h * P, Q, P, Eigen::OuterStride<>(s.x.stride));  // [Q, P]
      MutableRowsMap state(s.state + h * P * N, P, N, Eigen::OuterStride<>(N));      // [P, N]
      if (g != group_done) {
        w.cb.noalias() = c * b.transpose();
        group_done = g;
      }
      // The time steps as the scan computes them, and their running sums of dt A.
      float running = 0.0f;
      for (int64_t t = 0; t < Q; ++t) {
        dt[t] = s.time_step(t0 + t, h);
        running += dt[t] * s.a[h];
        cum[t] = running;
      }
      const float last = cum[Q - 1];
#pragma omp simd
      for (int64_t t = 0; t < Q; ++t) {
        from_start[t] = exp_nonpositive(cum[t]);
        to_end[t] = exp_nonpositive(last - cum[t]) * dt[t];
      }
      // The chunk's own tokens: mixed[t, s] = (C_t·B_s) e^{cum_t - cum_s} dt_s, s <= t.
      w.mixed.resize(Q, Q);
      for (int64_t t = 0; t < Q; ++t) {
        const float* cb = w.cb.data() + t * Q;
        float* m = w.mixed.data() + t * Q;
        const float ct = cum[t];
#pragma omp simd
        for (int64_t u = 0; u <= t; ++u) m[u] = cb[u] * exp_nonpositive(ct - cum[u]) * dt[u];
        for (int64_t u = t + 1; u < Q; ++u) m[u] = 0.0f;
      }
      w.y.noalias() = w.mixed * x;
      // The state the chunk started from, decayed to each token.
      w.from_state.noalias() = c * state.transpose();
      const float d = s.d[h];
      for (int64_t t = 0; t < Q; ++t) {
        const float* own = w.y.data() + t * P;
        const float* earlier = w.from_state.data() + t * P;
        const float* xt = s.x.row(t0 + t) + h * P;
        float* out = s.y.row(t0 + t) + h * P;
        const float decay = from_start[t];
#pragma omp simd
        for (int64_t p = 0; p < P; ++p) out[p] = own[p] + decay * earlier[p] + d * xt[p];
      }
      // The state at the chunk's end.
      w.weighted.resize(Q, P);
      for (int64_t t = 0; t < Q; ++t) {
        const float* xt = s.x.row(t0 + t) + h * P;
        float* row = w.weighted.data() + t * P;
        const float scale = to_end[t];
#pragma omp simd
        for (int64_t p = 0; p < P; ++p) row[p] = xt[p] * scale;
      }
      state *= from_start[Q - 1];
      state.noalias() += w.weighted.transpose() * b;
    }
  }
}

}  // namespace tessera::mamba::TESSERA_ISA_NAMESPACE
