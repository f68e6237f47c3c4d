// kquant_linear.hpp: y = x·Wᵀ (+ b) for Q2_K / Q3_K / Q4_K / Q5_K / Q6_K
// weights in the quantized domain: activations are quantized once per call to
// Q8_K (per 256 values: an f32 scale, 8-bit values, their sums per 16), then
// integer dot products per super-block with the block's scales applied in f32
// (KernelTable::q2_k .. q6_k on the ggml rows; repacked 8 rows at a time,
// KernelTable::q2_kx8 .. q6_kx8; Q4_K, Q5_K and Q6_K also on AMX panels). With one 8-bit term per block this is the
// arithmetic llama.cpp uses for these formats; with two (activation_terms.hpp)
// the second quantizes what the first left out. The f32 path (FloatLinear,
// activations = "f32") stays available as the exact product.
#pragma once

#include <cstdint>
#include <vector>

#include "activation_terms.hpp"
#include "blocks.hpp"
#include "kernels.hpp"
#include "tessera/linear.hpp"
#include "tessera/tensor.hpp"
#include "weight_arena.hpp"

namespace tessera::ggml {

// The repacked group kernel of `k` for K-quant `type` (Q2_K .. Q6_K), and
// its pair kernel (two groups at a time), nullptr where `k` has none.
KQuantGroupFn kquant_group_kernel(const KernelTable& k, DType type);
KQuantPairFn kquant_pair_kernel(const KernelTable& k, DType type);

class KQuantLinear final : public Linear {
 public:
  // `weights`: out_features rows of in_features / 256 super-blocks of `type`
  // (q2_k, q3_k, q4_k, q5_k or q6_k), kept by pointer. `bias`: empty or out_features.
  // `repack`: copy rows, 8 at a time, into BlockQ2Kx8 .. BlockQ6Kx8
  // (blocks.hpp) in `arena` (nullptr: memory of this Linear's own); rows
  // past the last whole group use the ggml layout in place.
  // `terms`: each activation block as one 8-bit term or two.
  KQuantLinear(const void* weights, DType type, int64_t out_features, int64_t in_features, std::vector<float> bias,
               bool repack = true, WeightArena* arena = nullptr, ActivationTerms terms = ActivationTerms::q8);

  int64_t in_features() const noexcept override { return in_; }
  int64_t out_features() const noexcept override { return out_; }
  uint64_t weight_bytes() const noexcept override { return static_cast<uint64_t>(out_) * row_bytes_; }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;
  // The split (linear.hpp): prepare() quantizes every row on the calling
  // thread; compute() takes ranges on multiples of the repacked group (8 rows).
  bool splits() const noexcept override { return true; }
  int64_t column_alignment() const noexcept override { return kRepackRows; }
  Status prepare(const float* x, int64_t n_rows) noexcept override;
  void compute(float* y, int64_t begin, int64_t end) noexcept override;

 private:
  KQuantTileFn tile(const KernelTable& k) const;
  KQuantPanelFn panel_kernel(const KernelTable& k) const;  // nullptr where the level has none
  // Output rows one rows() call takes at most: two groups where the level
  // has pair kernels for the format, else one.
  int64_t rows_per_call(const KernelTable& k) const;
  // Output rows [r0, r1) (r0 a multiple of 8) for nx <= kMaxRepackX activation
  // rows of xq; activation row i's output r goes to y[i * y_stride + r - r0].
  // weights_cached: an earlier call of the same chunk read these weight rows
  // (they are in cache, not streamed), which decides the kernel.
  void rows(const KernelTable& k, int64_t r0, int64_t r1, const BlockQ8K* xq, int nx, float* y,
            int64_t y_stride, bool weights_cached) const;
  // Output columns [r_begin, r_end) of all n_rows rows from the scratch, bias included.
  void output_range(const KernelTable& k, int64_t n_rows, float* y, int64_t r_begin, int64_t r_end) const;
  // Columns [r_begin, r_end) of the products of n quantized activation rows
  // (terms of rows, in q8x2): row i's column r to y[i * y_stride + r - r_begin].
  void products(const KernelTable& k, int64_t n, float* y, int64_t y_stride, int64_t r_begin, int64_t r_end) const;
  void quantize_rows(const KernelTable& k, const float* x, int64_t row_begin, int64_t row_end);
  // Room for n_rows quantized rows, and for their copy in the panels' order
  // where k's panels will take them (fill_panel_, until the next call).
  void reserve_scratch(const KernelTable& k, int64_t n_rows);

  const uint8_t* weights_;
  DType type_;
  int64_t out_;
  int64_t in_;
  size_t row_bytes_;
  std::vector<float> bias_;
  WeightArena::Slice repacked_;  // [repacked_rows_ / 8, in / 256] BlockQ2Kx8 .. BlockQ6Kx8, or empty
  int64_t repacked_rows_ = 0;    // rows held in repacked_
  size_t group_bytes_ = 0;       // bytes of one repacked group of 8 rows
  int64_t terms_;                     // 8-bit terms per activation block: 1 or 2
  std::vector<BlockQ8K> x_q8k_;       // [n_rows, terms, in / 256] quantized activations; grows, never shrinks
  HostBuffer x_panel_memory_;         // x_panel_'s
  PanelActivations x_panel_;          // x_q8k_'s rows as the panels read them; grows, never shrinks
  bool fill_panel_ = false;           // this call's rows go to x_panel_ too (the panels take them)
  const KernelTable* kernels_ = nullptr;  // chosen by the last prepare()
  int64_t prepared_rows_ = 0;
};

}  // namespace tessera::ggml
