// quant_linear.hpp: y = x·Wᵀ (+ b) for Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 weights, computed in
// the quantized domain: activations are quantized once per call to Q8_1 (one
// or two terms per block, activation_terms.hpp), then integer block dot
// products with per-block f32 scales (kernels.hpp).
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

// The group kernel of `k` for `type` in its 16-row (wide) or 8-row layout,
// or nullptr where `k` has none or the format has no repacked layout.
RepackTileFn repacked_group_kernel(const KernelTable& k, DType type, bool wide);

// The panel of `k` for `type`'s 16-row layout (amx), or nullptr.
RepackPanelFn repacked_panel_kernel(const KernelTable& k, DType type);

// The k of ActivationScales::q_offset for a repacked layout (`wide`: its 16
// rows): 128 for Q8_0 in 16 rows (stored q + 128, vpdpbusd's unsigned
// operand), 16 for Q5_0 (stored q + 16), 8 for Q4_0 (q + 8); 0 for the others
// (signed quants, or a minimum the kernel adds instead), whose kernels read
// no q_offset.
int32_t repacked_quant_excess(DType type, bool wide);

class QuantLinear final : public Linear {
 public:
  // `weights`: out_features rows of in_features / 32 blocks of `type`, kept by
  // pointer (it lives in the memory-mapped model). `bias`: empty or out_features.
  // `repack`: copy the rows, 16 at a time where the kernels in use have
  // 16-row kernels (AVX-512 VNNI), else 8, into the interleaved layouts of
  // blocks.hpp (same size; faster kernels). Rows past the last whole group
  // use the ggml layout in place.
  // `arena`: where the repacked rows go (the plugin's, shared by its Linears
  // so they fill 2 MiB pages); nullptr: a chunk of this Linear's own.
  // `terms`: each activation block as one 8-bit term or two (activation_terms.hpp).
  QuantLinear(const void* weights, DType type, int64_t out_features, int64_t in_features,
              std::vector<float> bias, bool repack = true, WeightArena* arena = nullptr,
              ActivationTerms terms = ActivationTerms::q8);

  int64_t in_features() const noexcept override { return in_; }
  int64_t out_features() const noexcept override { return out_; }
  // What a forward streams: every row's blocks (a repacked layout holds the
  // same bytes as the rows it interleaves).
  uint64_t weight_bytes() const noexcept override { return static_cast<uint64_t>(out_) * row_bytes_; }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;
  // The split (linear.hpp): prepare() quantizes every row on the calling
  // thread; compute() takes ranges on multiples of the repacked groups (8 or 16 rows).
  bool splits() const noexcept override { return true; }
  int64_t column_alignment() const noexcept override { return group_rows_; }
  Status prepare(const float* x, int64_t n_rows) noexcept override;
  void compute(float* y, int64_t begin, int64_t end) noexcept override;

 private:
  // The group kernel of `k` for this layout, or nullptr where `k` has none.
  RepackTileFn group_kernel(const KernelTable& k) const;
  // The panel of `k` for this layout (16-row groups, amx), or nullptr.
  RepackPanelFn panel_kernel(const KernelTable& k) const;
  // Output rows [r0, r1) (r0 a multiple of the group) for nx <= kMaxRepackX activation
  // rows; activation row i's output r goes to y[i * y_stride + r - r0]; the
  // group kernels prefetch as `ahead` says (kernels.hpp).
  void rows(const KernelTable& k, int64_t r0, int64_t r1, const BlockQ8_1* xq, const ActivationScales* xs, int nx,
            float* y, int64_t y_stride, StreamAhead ahead) const;
  // Activation rows [row_begin, row_end) of x into the scratch (Q8_1 and widened scales).
  void quantize_rows(const KernelTable& k, const float* x, int64_t row_begin, int64_t row_end);
  // Output columns [r_begin, r_end) of all n_rows rows from the scratch, bias included.
  void output_range(const KernelTable& k, int64_t n_rows, float* y, int64_t r_begin, int64_t r_end) const;
  // Columns [r_begin, r_end) of the products of n quantized activation rows
  // (terms of rows, in q8x2): row i's column r to y[i * y_stride + r - r_begin];
  // `ahead` for the kernels' first pass over each group's weights.
  void products(const KernelTable& k, int64_t n, float* y, int64_t y_stride, int64_t r_begin, int64_t r_end,
                StreamAhead ahead) const;
  // Room for n_rows activation rows, and whether they go to x_tiles_ too
  // (fill_panel_: k's panels will take them).
  void reserve_scratch(const KernelTable& k, int64_t n_rows);

  const uint8_t* weights_;
  DType type_;
  int64_t out_;
  int64_t in_;
  size_t row_bytes_;
  std::vector<float> bias_;
  int64_t group_rows_ = kRepackRows;  // rows per repacked group: 8 or 16
  WeightArena::Slice repacked_;  // [repacked_rows_ / group_rows_, in / 32] interleaved blocks, or empty
  int64_t repacked_rows_ = 0;    // rows held in repacked_
  int64_t terms_;                // 8-bit terms per activation block: 1 or 2
  std::vector<BlockQ8_1> x_q8_;  // [n_rows, terms, in / 32] quantized activations; grows, never shrinks
  std::vector<ActivationScales> x_scales_;  // [n_rows, terms, in / 32] their d and s as f32, q_offset (repacked path)
  HostBuffer x_tiles_memory_;                // x_tiles_'s
  BlockTiles x_tiles_;                       // x_q8_'s quants as the panels read them; grows, never shrinks
  bool fill_panel_ = false;                  // this call's rows go to x_tiles_ too
  const KernelTable* kernels_ = nullptr;     // chosen by the last prepare()
  int64_t prepared_rows_ = 0;                // rows the scratch holds after prepare()
};

}  // namespace tessera::ggml
