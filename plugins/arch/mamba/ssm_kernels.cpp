// ssm_kernels.cpp: the convolution and the two scans, compiled once per
// instruction-set level (tessera_isa_variants in CMakeLists.txt; ssm.cpp picks
// the level) with -fno-trapping-math, so that GCC turns exp_nonpositive's
// clamp into a select and the loops over the state vectorize: at the scalar
// level (SSE2) 4 floats wide, at AVX2 8 with FMA. Without the flag they ran
// one float at a time, a fifth of a mamba-130m decode step.
#include "ssm_kernels.hpp"

#include <algorithm>

#include "tessera/blocks/silu.hpp"
#include "tessera/fast_exp.hpp"

namespace tessera::mamba::TESSERA_ISA_NAMESPACE {

void causal_conv_silu_kernel(Rows in, MutableRows out, int64_t n, int64_t channels, int64_t d_conv, const float* weight,
                             const float* bias, float* window, int64_t c0, int64_t c1) {
  const int64_t taps = d_conv - 1;  // window rows
  for (int64_t t = 0; t < n; ++t) {
    const float* x = in.row(t);
    float* y = out.row(t);
    // Tap by tap across the channels, so each loop runs along contiguous
    // rows (vectorized); the sum's order per channel is bias, the window's
    // taps oldest first, then x, as the equation reads.
    for (int64_t c = c0; c < c1; ++c) y[c] = bias[c];
    for (int64_t k = 0; k < taps; ++k) {
      const float* w = weight + k * channels;
      const float* past = window + k * channels;
#pragma omp simd
      for (int64_t c = c0; c < c1; ++c) y[c] += w[c] * past[c];
    }
    const float* w_last = weight + taps * channels;
#pragma omp simd
    for (int64_t c = c0; c < c1; ++c) {
      const float acc = y[c] + w_last[c] * x[c];
      // silu with exp in double (blocks/silu.hpp): std::exp's floats, vectorized.
      y[c] = acc / (1.0f + static_cast<float>(blocks::exp_for_float(-static_cast<double>(acc))));
    }
    // Slide the window by one token: drop the oldest input, append x.
    for (int64_t k = 0; k + 1 < taps; ++k)
      for (int64_t c = c0; c < c1; ++c) window[k * channels + c] = window[(k + 1) * channels + c];
    for (int64_t c = c0; c < c1; ++c) window[(taps - 1) * channels + c] = x[c];
  }
}

void softplus_kernel(float* v, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) v[i] = softplus(v[i]);
}

void mamba1_scan_kernel(const Mamba1Scan& s, int64_t n, int64_t c0, int64_t c1) {
  const int64_t N = s.d_state;
  for (int64_t ch = c0; ch < c1; ++ch) {
    float* state = s.state + ch * N;  // [N]
    const float* a = s.a + ch * N;    // [N]
    for (int64_t t = 0; t < n; ++t) {
      const float dt = s.dt.row(t)[ch];
      const float x = s.x.row(t)[ch];
      const float x_dt = x * dt;
      const float* b = s.b.row(t);
      const float* c = s.c.row(t);
      float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
      for (int64_t j = 0; j < N; ++j) {
        const float h = state[j] * exp_nonpositive(dt * a[j]) + b[j] * x_dt;
        state[j] = h;
        acc += h * c[j];
      }
      s.y.row(t)[ch] = acc + s.d[ch] * x;
    }
  }
}

void mamba2_scan_kernel(const Mamba2Scan& s, int64_t n, int64_t h0, int64_t h1) {
  const int64_t N = s.d_state, P = s.head_dim;
  const int64_t heads_per_group = s.n_head / s.n_group;
  for (int64_t h = h0; h < h1; ++h) {
    const int64_t g = h / heads_per_group;
    float* state = s.state + h * P * N;  // [P, N]
    for (int64_t t = 0; t < n; ++t) {
      const float dt = s.time_step(t, h);
      const float decay = exp_nonpositive(dt * s.a[h]);
      const float* x = s.x.row(t) + h * P;
      const float* b = s.b.row(t) + g * N;
      const float* c = s.c.row(t) + g * N;
      float* y = s.y.row(t) + h * P;
      for (int64_t p = 0; p < P; ++p) {
        const float x_dt = x[p] * dt;
        float* sp = state + p * N;
        float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = 0; j < N; ++j) {
          const float v = sp[j] * decay + b[j] * x_dt;
          sp[j] = v;
          acc += v * c[j];
        }
        y[p] = acc + s.d[h] * x[p];
      }
    }
  }
}

}  // namespace tessera::mamba::TESSERA_ISA_NAMESPACE
