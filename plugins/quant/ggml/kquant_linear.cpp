// kquant_linear.cpp: the K-quant drivers, decode (one activation row) and
// prefill (many) alike: repacked groups of 8 weight rows (two at a time where
// the level has pair kernels) by up to 8 activation rows, and tiles of 4 by 4
// on the ggml rows past the last group.
#include "kquant_linear.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "formats.hpp"
#include "reference.hpp"
#include "repack.hpp"
#include "row_split.hpp"

namespace tessera::ggml {

KQuantLinear::KQuantLinear(const void* weights, DType type, int64_t out_features, int64_t in_features,
                           std::vector<float> bias, bool repack, WeightArena* arena, ActivationTerms terms)
    : weights_(static_cast<const uint8_t*>(weights)),
      type_(type),
      out_(out_features),
      in_(in_features),
      row_bytes_(dtype_row_bytes(type, static_cast<uint64_t>(in_features))),
      bias_(std::move(bias)),
      terms_(static_cast<int64_t>(terms)) {
  if (!is_kquant(type))
    throw std::invalid_argument("KQuantLinear: not a K-quant type: " + std::string(dtype_name(type)));
  if (in_features % kSuperBlock != 0)
    throw std::invalid_argument("KQuantLinear: rows of " + std::to_string(in_features) + " are not whole super-blocks");
  if (!repack) return;
  repacked_rows_ = out_ / kRepackRows * kRepackRows;
  if (repacked_rows_ == 0) return;
  const int64_t nb = in_ / kSuperBlock;
  group_bytes_ = static_cast<size_t>(nb) * kquant_x8_block_bytes(type);
  const size_t bytes = static_cast<size_t>(repacked_rows_ / kRepackRows) * group_bytes_;
  repacked_ = arena != nullptr ? arena->allocate(bytes) : WeightArena::allocate_alone(bytes);
  repack_kquant_x8(type, weights_, repacked_rows_, nb, repacked_.data);
}

KQuantTileFn KQuantLinear::tile(const KernelTable& k) const {
  switch (type_) {
    case DType::q2_k: return k.q2_k;
    case DType::q3_k: return k.q3_k;
    case DType::q4_k: return k.q4_k;
    case DType::q5_k: return k.q5_k;
    default: return k.q6_k;
  }
}

KQuantGroupFn kquant_group_kernel(const KernelTable& k, DType type) {
  switch (type) {
    case DType::q2_k: return k.q2_kx8;
    case DType::q3_k: return k.q3_kx8;
    case DType::q4_k: return k.q4_kx8;
    case DType::q5_k: return k.q5_kx8;
    default: return k.q6_kx8;
  }
}

// Activation rows from which two groups go through the pair kernel. With
// few rows a call is bound by streaming the weights, where the groups' single
// stream held up better on a shared host. Qwen2.5-Coder-1.5B Q4_K_M, 2
// threads, Zen 5, time to first token of n tokens, builds alternating: with a
// neighbour halving the bandwidth (one row 19.9 ms), 2-3 rows 23.1-23.9 ms by
// pairs against 20.3-20.8 by groups, 4 rows 22.4-22.6 against 20.6-20.9, 8
// rows 23.3 against 34.7; on the idle host minutes before, 4 rows 15.2-15.8
// against 18.3-18.4 and 5 rows 16.2-16.5 against 24.4-25.9. Four is where
// the pairs won idle (by 17%) and lost contended (by 9%). Rows after the
// first tile of a chunk find the weights in cache, where the pairs' fewer
// instructions per product and activation row (Q4_K: 10 per 512 against
// the groups' 18, the weights' unpacking aside) take them (KQuantLinear::rows;
// measured on the Xeon with AMX for tiles of 1 and 3 rows, docs/kernels.md).
constexpr int kMinPairRows = 4;

KQuantPairFn kquant_pair_kernel(const KernelTable& k, DType type) {
  switch (type) {
    case DType::q4_k: return k.q4_k_pair;
    case DType::q5_k: return k.q5_k_pair;
    case DType::q6_k: return k.q6_k_pair;
    case DType::q2_k: return k.q2_k_pair;
    default: return k.q3_k_pair;
  }
}

int64_t KQuantLinear::rows_per_call(const KernelTable& k) const {
  return kquant_pair_kernel(k, type_) != nullptr ? 2 * kRepackRows : kRepackRows;
}

void KQuantLinear::rows(const KernelTable& k, int64_t r0, int64_t r1, const BlockQ8K* xq, int nx, float* y,
                        int64_t y_stride, bool weights_cached) const {
  const int64_t nb = in_ / kSuperBlock;
  const KQuantGroupFn group = repacked_rows_ > 0 ? kquant_group_kernel(k, type_) : nullptr;
  // Few rows against weights streamed from memory: the groups (kMinPairRows).
  // Against weights a tile before this one brought into cache (the 9th row of
  // a verification step, say), the pairs at any count.
  const KQuantPairFn pair =
      group != nullptr && (nx >= kMinPairRows || weights_cached) ? kquant_pair_kernel(k, type_) : nullptr;
  const int64_t packed_end = group != nullptr ? repacked_rows_ : 0;
  const auto ys = static_cast<size_t>(y_stride);
  int64_t r = r0;
  for (; pair != nullptr && r + 2 * kRepackRows <= std::min(r1, packed_end); r += 2 * kRepackRows) {
    pair(repacked_.data + (r / kRepackRows) * group_bytes_, group_bytes_, nb, xq, static_cast<size_t>(nb), nx,
         y + (r - r0), ys);
  }
  for (; r < r1 && r + kRepackRows <= packed_end; r += kRepackRows) {
    group(repacked_.data + (r / kRepackRows) * group_bytes_, nb, xq, static_cast<size_t>(nb), nx, y + (r - r0), ys);
  }
  const KQuantTileFn t = tile(k);
  for (; r < r1; r += kMaxTileW) {
    const int nw = static_cast<int>(std::min<int64_t>(kMaxTileW, r1 - r));
    for (int x0 = 0; x0 < nx; x0 += kMaxTileX) {
      t(weights_ + r * row_bytes_, row_bytes_, nw, xq + x0 * nb, static_cast<size_t>(nb), std::min(kMaxTileX, nx - x0),
        nb, y + x0 * y_stride + (r - r0), ys);
    }
  }
}

void KQuantLinear::reserve_scratch(const KernelTable& k, int64_t n_rows) {
  const auto nb = static_cast<size_t>(in_ / kSuperBlock);
  const auto term_rows = static_cast<size_t>(n_rows * terms_);
  if (x_q8k_.size() < term_rows * nb) x_q8k_.resize(term_rows * nb);  // steady state: no allocation
  // The panels take whole tiles of 16 term rows: fewer never reach them.
  fill_panel_ = panel_kernel(k) != nullptr && term_rows >= kPanelTileX;
  if (!fill_panel_ || term_rows <= x_panel_.rows) return;
  // Room for a whole chunk of forward() at once, so batches that grow a row
  // at a time do not allocate on every call.
  const size_t rows = std::max(term_rows, static_cast<size_t>(kMaxScratchRows * terms_));
  x_panel_memory_ = HostBuffer(panel_activation_bytes(static_cast<int64_t>(nb), rows));
  x_panel_ = panel_activations(x_panel_memory_.data(), static_cast<int64_t>(nb), rows);
}

void KQuantLinear::quantize_rows(const KernelTable& k, const float* x, int64_t row_begin, int64_t row_end) {
  const int64_t nb = in_ / kSuperBlock;
  thread_local std::vector<float> residual;  // q8x2: [in] what the first term left out; grows, never shrinks
  if (terms_ == 2 && residual.size() < static_cast<size_t>(in_)) residual.resize(static_cast<size_t>(in_));
  for (int64_t i = row_begin; i < row_end; ++i) {
    BlockQ8K* q = x_q8k_.data() + i * terms_ * nb;  // [terms, nb]
    k.quantize_q8_k(x + i * in_, q, in_);
    if (terms_ == 2) {
      q8_k_residual(x + i * in_, q, residual.data(), in_);
      k.quantize_q8_k(residual.data(), q + nb, in_);
    }
    if (!fill_panel_) continue;
    for (int64_t t = 0; t < terms_; ++t) panel_quants(q + t * nb, nb, i * terms_ + t, x_panel_);
  }
}

void KQuantLinear::output_range(const KernelTable& k, int64_t n_rows, float* y, int64_t r_begin, int64_t r_end) const {
  output_columns(terms_, n_rows, out_, y, bias_, r_begin, r_end,
                 [&](int64_t n, float* dst, int64_t stride, int64_t b, int64_t e) { products(k, n, dst, stride, b, e); });
}

KQuantPanelFn KQuantLinear::panel_kernel(const KernelTable& k) const {
  if (repacked_rows_ < kPanelRows) return nullptr;
  switch (type_) {
    case DType::q4_k: return k.q4_k_panel;
    case DType::q5_k: return k.q5_k_panel;
    case DType::q6_k: return k.q6_k_panel;
    default: return nullptr;  // Q2_K, Q3_K: no AMX panels
  }
}

void KQuantLinear::products(const KernelTable& k, int64_t n_rows, float* y, int64_t y_stride, int64_t r_begin,
                            int64_t r_end) const {
  const int64_t nb = in_ / kSuperBlock;
  const auto groups = [&](int64_t n, int64_t x_first, int64_t c_begin, int64_t c_end) {
    products_in_groups(n, c_begin, c_end, rows_per_call(k), kMaxRepackX,
                       [&](int64_t r0, int64_t r1, int64_t x0, int nx, bool weights_cached) {
                         const int64_t xi = x_first + x0;
                         rows(k, r0, r1, x_q8k_.data() + xi * nb, nx, y + xi * y_stride + (r0 - r_begin), y_stride,
                              weights_cached);
                       });
  };
  // Panels (AMX): 16 weight rows by every whole tile of 16 activation rows;
  // the activation rows past the last tile and the weight rows past the last
  // panel take the group kernels.
  const KQuantPanelFn panel = panel_kernel(k);
  const int64_t tiled = n_rows / kPanelTileX * kPanelTileX;
  if (panel == nullptr || tiled == 0 || !fill_panel_) {
    groups(n_rows, 0, r_begin, r_end);
    return;
  }
  int64_t r = r_begin;  // a multiple of 8 (column_alignment)
  for (; r + kPanelRows <= r_end && r + kPanelRows <= repacked_rows_; r += kPanelRows) {
    panel(repacked_.data + (r / kRepackRows) * group_bytes_, group_bytes_, nb, x_q8k_.data(), static_cast<size_t>(nb),
          x_panel_, static_cast<int>(tiled), y + (r - r_begin), static_cast<size_t>(y_stride));
  }
  if (tiled < n_rows && r > r_begin) groups(n_rows - tiled, tiled, r_begin, r);
  if (r < r_end) groups(n_rows, 0, r, r_end);
}

Status KQuantLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  if (n_rows <= 0) return n_rows == 0 ? Status::Ok() : InvalidArgument("ggml K-quant linear: negative row count");
  if (x == nullptr || y == nullptr) return InvalidArgument("ggml K-quant linear: null input or output");
  return guard([&]() -> Status {
    const KernelTable& k = active_kernels();  // read per call so a forced level applies at once
    reserve_scratch(k, std::min(n_rows, kMaxScratchRows));
    forward_in_chunks(
        x, y, n_rows, in_, out_, weight_bytes(), kRepackRows,
        [&](const float* xc, int64_t b, int64_t e) { quantize_rows(k, xc, b, e); },
        [&](int64_t rows, float* yc, int64_t b, int64_t e) { output_range(k, rows, yc, b, e); });
    return Status::Ok();
  });
}

Status KQuantLinear::prepare(const float* x, int64_t n_rows) noexcept {
  if (n_rows <= 0) return InvalidArgument("ggml K-quant linear: prepare needs at least one row");
  if (x == nullptr) return InvalidArgument("ggml K-quant linear: null input");
  return guard([&]() -> Status {
    const KernelTable& k = active_kernels();
    kernels_ = &k;
    reserve_scratch(k, n_rows);
    quantize_rows(k, x, 0, n_rows);
    prepared_rows_ = n_rows;
    return Status::Ok();
  });
}

void KQuantLinear::compute(float* y, int64_t begin, int64_t end) noexcept {
  if (kernels_ == nullptr || prepared_rows_ <= 0 || y == nullptr) return;
  output_range(*kernels_, prepared_rows_, y, std::clamp<int64_t>(begin, 0, out_), std::clamp<int64_t>(end, 0, out_));
}

}  // namespace tessera::ggml
