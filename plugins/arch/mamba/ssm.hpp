// ssm.hpp: the recurrent pieces of a Mamba mixer, for one sequence's tokens
// in order, continuing from (and updating) that sequence's state.
//
// Each function handles a range of channels (Mamba-1) or heads (Mamba-2), so
// a caller can split one step's work over threads and sequences; a channel's
// tokens are always visited in order by one thread. The result is the same
// whether a prompt arrives in one batch, in chunks or token by token, and
// whatever else shares the batch: every token's arithmetic depends only on
// the state its sequence had before it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "tessera/blocks/silu.hpp"

namespace tessera::mamba {

// HF's and llama.cpp's softplus, log(1 + e^x) (x itself above 20), in double
// and branch-free, so that an `omp simd` loop vectorizes it: std::log1p is a
// call per element, and took 7-9% of a Mamba-1 prefill. With u = e^-|x| <= 1,
//   log(1 + e^x) = max(x, 0) + log1p(u),   log1p(u) = 2 atanh(s),  s = u / (2 + u) <= 1/3,
// and atanh(s) = s (1 + s^2/3 + s^4/5 + ... + s^22/23) leaves < 2e-13
// relative, so the float result is log1p(exp(x)) correctly rounded except
// where that lies within ~1e-13 of a rounding boundary (then one float ulp
// off; ssm_test.cpp checks).
inline float softplus(float x) {
  const double xd = x;
  const double u = blocks::exp_for_float(-std::fabs(xd));
  const double s = u / (2.0 + u);
  const double s2 = s * s;
  double p = 1.0 / 23;
  p = p * s2 + 1.0 / 21;
  p = p * s2 + 1.0 / 19;
  p = p * s2 + 1.0 / 17;
  p = p * s2 + 1.0 / 15;
  p = p * s2 + 1.0 / 13;
  p = p * s2 + 1.0 / 11;
  p = p * s2 + 1.0 / 9;
  p = p * s2 + 1.0 / 7;
  p = p * s2 + 1.0 / 5;
  p = p * s2 + 1.0 / 3;
  p = p * s2 + 1.0;
  const double y = (xd > 0.0 ? xd : 0.0) + 2.0 * s * p;
  return x > 20.0f ? x : static_cast<float>(y);
}
inline float silu(float x) { return x / (1.0f + std::exp(-x)); }

// Rows of a sequence in a [rows, stride] buffer: element (t, i) at data[t * stride + i].
struct Rows {
  const float* data = nullptr;
  int64_t stride = 0;
  const float* row(int64_t t) const { return data + t * stride; }
  Rows from(int64_t t) const { return {row(t), stride}; }  // the rows from t on
};
struct MutableRows {
  float* data = nullptr;
  int64_t stride = 0;
  float* row(int64_t t) const { return data + t * stride; }
  MutableRows from(int64_t t) const { return {row(t), stride}; }
};

// Causal depthwise convolution with SiLU, for channels [c0, c1):
//   out(t, c) = silu(bias[c] + sum_k weight[k, c] * in(t - (d_conv - 1) + k, c))
// where inputs before the sequence's first token are zero. `window` [d_conv - 1,
// channels] holds the inputs of the d_conv - 1 tokens before t = 0, oldest
// first, and is left holding those before t = n. weight: [d_conv, channels]
// (tap-major); bias: [channels]. `out` must not overlap `in` (a token's
// output is built in place before its input is read).
void causal_conv_silu(Rows in, MutableRows out, int64_t n, int64_t channels, int64_t d_conv, const float* weight,
                      const float* bias, float* window, int64_t c0, int64_t c1);

// dt = softplus(dt) for the n values of `dt`, in place, vectorized (Mamba-1
// applies it to dt_proj's output before the scan).
void softplus_in_place(float* dt, int64_t n);

// Mamba-1's selective scan for channels [c0, c1); per token t and channel c,
// with dt(t, c) already through softplus (softplus_in_place):
//   s[c, j] = exp(dt * A[c, j]) * s[c, j] + dt * x(t, c) * B(t, j)      j < d_state
//   y(t, c) = sum_j s[c, j] * C(t, j) + D[c] * x(t, c)
// The gate, y * silu(z), comes after (gate_row). x, dt: [n, >= channels];
// b, c: [n, >= d_state]; A: [d_inner, d_state]; D: [d_inner];
// state: [d_inner, d_state]; y: [n, >= channels].
struct Mamba1Scan {
  Rows x, dt, b, c;
  const float* a = nullptr;
  const float* d = nullptr;
  float* state = nullptr;
  MutableRows y;
  int64_t d_state = 0;
};
void mamba1_scan(const Mamba1Scan& s, int64_t n, int64_t c0, int64_t c1);

// Mamba-2's scan for heads [h0, h1); head h has channels [h P, (h + 1) P) and
// reads B and C of group g = h / (n_head / n_group). Per token t:
//   dt = clamp(softplus(dt_raw(t, h) + dt_bias[h]), dt_min, dt_max),  decay = exp(dt * A[h])
//   s[h, p, j] = decay * s[h, p, j] + dt * x(t, hP + p) * B(t, g N + j)
//   y(t, hP + p) = sum_j s[h, p, j] * C(t, g N + j) + D[h] * x(t, hP + p)
// The gate and norm come after (gated_group_rms_norm). x: [n, >= d_inner];
// b, c: [n, >= n_group N]; dt_raw: [n, >= n_head]; A, D, dt_bias: [n_head];
// state: [n_head, P, N]; y: [n, >= d_inner].
struct Mamba2Scan {
  Rows x, b, c, dt_raw;
  const float* a = nullptr;
  const float* d = nullptr;
  const float* dt_bias = nullptr;
  float dt_min = 0.0f, dt_max = std::numeric_limits<float>::infinity();  // time_step_limit
  float* state = nullptr;
  MutableRows y;
  int64_t n_head = 0, head_dim = 0, n_group = 1, d_state = 0;
  // Head h's time step at token t. No std::clamp: it asserts low <= high;
  // NaN passes through min and max.
  float time_step(int64_t t, int64_t h) const {
    return std::min(std::max(softplus(dt_raw.row(t)[h] + dt_bias[h]), dt_min), dt_max);
  }
  // The same scan, its token rows starting t tokens later.
  Mamba2Scan from(int64_t t) const {
    Mamba2Scan later = *this;
    later.x = x.from(t);
    later.b = b.from(t);
    later.c = c.from(t);
    later.dt_raw = dt_raw.from(t);
    later.y = y.from(t);
    return later;
  }
};
void mamba2_scan(const Mamba2Scan& s, int64_t n, int64_t h0, int64_t h1);

// Tokens per chunk of Mamba-2's chunked scan (it divides the engine's
// kPromptSplitAlignment, so split prompts keep their chunks).
inline constexpr int64_t kSsdChunk = 64;

// Mamba-2's scan over n_chunks whole chunks of kSsdChunk tokens (s's rows
// from the first chunk's first token), in the chunked matrix form (SSD, Dao
// & Gu 2024; ssd_kernels.cpp): the same equations as mamba2_scan, summed in
// another order, so its results differ from the scan's in the last bits
// (within 2e-6 relative of float64 in ssm_test.cpp). A chunk's results
// depend only on its inputs and the state before it.
void mamba2_chunked_scan(const Mamba2Scan& s, int64_t n_chunks, int64_t h0, int64_t h1);

// The gate of one token: y = y * silu(z), vectorized (blocks::silu_mul); z is
// overwritten with the result, which is then copied to y. y, z: [width].
void gate_row(float* y, float* z, int64_t width);

// Mamba-2's output norm on one token: y * silu(z), then each of n_group
// equal groups RMS-normed on its own and scaled by weight, into y. z is
// overwritten. y, z, weight: [width].
void gated_group_rms_norm(float* y, float* z, const float* weight, int64_t width, int64_t n_group, float eps);

}  // namespace tessera::mamba
