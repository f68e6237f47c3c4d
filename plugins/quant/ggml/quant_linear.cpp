// quant_linear.cpp: the matrix-vector (decode) and matrix-matrix (prefill) drivers.
#include "quant_linear.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "tessera/half.hpp"
#include "repack.hpp"
#include "row_split.hpp"

namespace tessera::ggml {
namespace {

QuantTileFn tile_for(const KernelTable& k, DType type) {
  switch (type) {
    case DType::q4_0: return k.q4_0;
    case DType::q4_1: return k.q4_1;
    case DType::q8_0: return k.q8_0;
    case DType::q5_0: return k.q5_0;
    case DType::q5_1: return k.q5_1;
    default: return nullptr;
  }
}

}  // namespace

QuantLinear::QuantLinear(const void* weights, DType type, int64_t out_features, int64_t in_features,
                         std::vector<float> bias, bool repack, WeightArena* arena, ActivationTerms terms)
    : weights_(static_cast<const uint8_t*>(weights)),
      type_(type),
      out_(out_features),
      in_(in_features),
      row_bytes_(dtype_row_bytes(type, static_cast<uint64_t>(in_features))),
      bias_(std::move(bias)),
      terms_(static_cast<int64_t>(terms)) {
  const KernelTable& k = active_kernels();
  if (!repack || repacked_group_kernel(k, type, false) == nullptr) return;  // a format without repacked layouts
  // The 16-row layout where the kernels in use have it; a level forced later
  // that lacks it computes from the ggml rows instead (rows()).
  group_rows_ = repacked_group_kernel(k, type, true) != nullptr ? kWideRepackRows : kRepackRows;
  repacked_rows_ = out_ / group_rows_ * group_rows_;
  if (repacked_rows_ == 0) return;
  const int64_t nb = in_ / kBlock;
  const size_t bytes = static_cast<size_t>(repacked_rows_) * row_bytes_;  // the same bytes, interleaved
  repacked_ = arena != nullptr ? arena->allocate(bytes) : WeightArena::allocate_alone(bytes);
  repack_rows(type, group_rows_ == kWideRepackRows, weights_, repacked_rows_, nb, repacked_.data);
}

int32_t repacked_quant_excess(DType type, bool wide) {
  switch (type) {
    case DType::q8_0: return wide ? 128 : 0;
    case DType::q5_0: return 16;
    case DType::q4_0: return 8;
    default: return 0;
  }
}

RepackTileFn repacked_group_kernel(const KernelTable& k, DType type, bool wide) {
  switch (type) {
    case DType::q4_0: return wide ? k.q4_0x16 : k.q4_0x8;
    case DType::q4_1: return wide ? k.q4_1x16 : k.q4_1x8;
    case DType::q8_0: return wide ? k.q8_0x16 : k.q8_0x8;
    case DType::q5_0: return wide ? k.q5_0x16 : k.q5_0x8;
    case DType::q5_1: return wide ? k.q5_1x16 : k.q5_1x8;
    default: return nullptr;
  }
}

RepackTileFn QuantLinear::group_kernel(const KernelTable& k) const {
  return repacked_group_kernel(k, type_, group_rows_ == kWideRepackRows);
}

void QuantLinear::rows(const KernelTable& k, int64_t r0, int64_t r1, const BlockQ8_1* xq,
                       const ActivationScales* xs, int nx, float* y, int64_t y_stride) const {
  const int64_t nb = in_ / kBlock;
  const RepackTileFn group = repacked_rows_ > 0 ? group_kernel(k) : nullptr;
  const int64_t packed_end = group != nullptr ? repacked_rows_ : 0;  // no kernel for the layout: the ggml rows
  const QuantTileFn tile = tile_for(k, type_);
  const auto ys = static_cast<size_t>(y_stride);
  int64_t r = r0;
  for (; r < r1 && r + group_rows_ <= packed_end; r += group_rows_) {
    group(repacked_.data + r * row_bytes_, nb, xq, xs, static_cast<size_t>(nb), nx, y + (r - r0), ys);
  }
  const int tile_x = std::clamp(k.preferred_tile_x, 1, kMaxTileX);
  for (; r < r1; r += kMaxTileW) {
    const int nw = static_cast<int>(std::min<int64_t>(kMaxTileW, r1 - r));
    for (int x0 = 0; x0 < nx; x0 += tile_x) {
      tile(weights_ + r * row_bytes_, row_bytes_, nw, xq + x0 * nb, static_cast<size_t>(nb), std::min(tile_x, nx - x0),
           nb, y + x0 * y_stride + (r - r0), ys);
    }
  }
}

void QuantLinear::quantize_rows(const KernelTable& k, const float* x, int64_t row_begin, int64_t row_end) {
  const int64_t nb = in_ / kBlock;
  ActivationScales* xs = repacked_rows_ > 0 ? x_scales_.data() : nullptr;
  // The layouts whose kernels take the quant sums (q_offset); the others read none.
  const int32_t excess = repacked_quant_excess(type_, group_rows_ == kWideRepackRows);
  // Per thread, one row at a time (grow, never shrink): q8x2's residual and
  // block sums, and the row's f16 fields converted in bulk (F16C where the
  // CPU has it; one at a time the portable conversion took ~2% of decode).
  struct RowBuffers {
    std::vector<float> residual, sums, wide;  // [in], [in / 32], [2 * terms * in / 32]
    std::vector<uint16_t> bits;               // [2 * terms * in / 32]
  };
  thread_local RowBuffers buf;
  const int64_t m = terms_ * nb;  // blocks per row, both terms
  if (terms_ == 2 && buf.residual.size() < static_cast<size_t>(in_)) {
    buf.residual.resize(static_cast<size_t>(in_));
    buf.sums.resize(static_cast<size_t>(nb));
  }
  if (buf.bits.size() < static_cast<size_t>(2 * m)) {
    buf.wide.resize(static_cast<size_t>(2 * m));
    buf.bits.resize(static_cast<size_t>(2 * m));
  }
  float* sums = buf.sums.data();
  float* wide = buf.wide.data();
  uint16_t* bits = buf.bits.data();
  for (int64_t i = row_begin; i < row_end; ++i) {
    const float* xi = x + i * in_;
    BlockQ8_1* q = x_q8_.data() + i * m;  // [terms, nb]
    k.quantize_q8_1(xi, q, in_);
    if (terms_ == 2) {
      q8_1_residual(xi, q, buf.residual.data(), sums, in_);
      k.quantize_q8_1(buf.residual.data(), q + nb, in_);
      // The minimum's sum (activation_terms.hpp): the ggml-layout tiles read
      // an f16 s per term, so the two terms carry the exact sum's f16 rounding
      // and what that rounding left out (together within 2^-22 of it).
      f32_to_f16_n(sums, bits, nb);
      f16_to_f32_n(bits, wide, nb);
      for (int64_t b = 0; b < nb; ++b) wide[b] = sums[b] - wide[b];
      f32_to_f16_n(wide, bits + nb, nb);
      for (int64_t b = 0; b < nb; ++b) {
        q[b].s = bits[b];
        q[nb + b].s = bits[nb + b];
      }
    }
    if (xs == nullptr) continue;
    // d of every block widened; s too with one term. With two the repacked
    // kernels read f32 s: the exact sum on the first term, none on the second.
    const int64_t n_wide = terms_ == 2 ? m : 2 * m;
    for (int64_t b = 0; b < m; ++b) {
      bits[b] = q[b].d;
      if (terms_ == 1) bits[m + b] = q[b].s;
    }
    f16_to_f32_n(bits, wide, n_wide);
    ActivationScales* row_scales = xs + i * m;
    for (int64_t b = 0; b < m; ++b) {
      int32_t q_sum = 0;
      if (excess != 0) {
        for (int j = 0; j < kBlock; ++j) q_sum += q[b].qs[j];
      }
      const float s = terms_ == 1 ? wide[m + b] : (b < nb ? sums[b] : 0.0f);
      row_scales[b] = {wide[b], s, -excess * q_sum};
    }
  }
}

void QuantLinear::products(const KernelTable& k, int64_t n, float* y, int64_t y_stride, int64_t r_begin,
                           int64_t r_end) const {
  const int64_t nb = in_ / kBlock;
  const BlockQ8_1* xq = x_q8_.data();
  const ActivationScales* xs = repacked_rows_ > 0 ? x_scales_.data() : nullptr;
  products_in_groups(n, r_begin, r_end, group_rows_, kMaxRepackX, [&](int64_t r0, int64_t r1, int64_t x0, int nx) {
    rows(k, r0, r1, xq + x0 * nb, xs == nullptr ? nullptr : xs + x0 * nb, nx, y + x0 * y_stride + (r0 - r_begin),
         y_stride);
  });
}

void QuantLinear::output_range(const KernelTable& k, int64_t n_rows, float* y, int64_t r_begin, int64_t r_end) const {
  output_columns(terms_, n_rows, out_, y, bias_, r_begin, r_end,
                 [&](int64_t n, float* dst, int64_t stride, int64_t b, int64_t e) { products(k, n, dst, stride, b, e); });
}

void QuantLinear::reserve_scratch(int64_t n_rows) {
  // Steady state: no allocation (every buffer grows, never shrinks).
  const auto grow = [](auto& v, int64_t size) {
    if (v.size() < static_cast<size_t>(size)) v.resize(static_cast<size_t>(size));
  };
  const int64_t nb = in_ / kBlock;
  grow(x_q8_, n_rows * terms_ * nb);
  if (repacked_rows_ > 0) grow(x_scales_, n_rows * terms_ * nb);
}

Status QuantLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  if (n_rows <= 0) return n_rows == 0 ? Status::Ok() : InvalidArgument("ggml linear: negative row count");
  if (x == nullptr || y == nullptr) return InvalidArgument("ggml linear: null input or output");
  return guard([&]() -> Status {
    const KernelTable& k = active_kernels();  // read per call so a forced level applies at once
    if (tile_for(k, type_) == nullptr) return Internal("ggml linear: no kernel for " + std::string(dtype_name(type_)));
    reserve_scratch(std::min(n_rows, kMaxScratchRows));
    // Boundaries on multiples of the group keep repacked groups whole (and tiles of 4).
    forward_in_chunks(
        x, y, n_rows, in_, out_, weight_bytes(), group_rows_,
        [&](const float* xc, int64_t b, int64_t e) { quantize_rows(k, xc, b, e); },
        [&](int64_t rows, float* yc, int64_t b, int64_t e) { output_range(k, rows, yc, b, e); });
    return Status::Ok();
  });
}

Status QuantLinear::prepare(const float* x, int64_t n_rows) noexcept {
  if (n_rows <= 0) return InvalidArgument("ggml linear: prepare needs at least one row");
  if (x == nullptr) return InvalidArgument("ggml linear: null input");
  return guard([&]() -> Status {
    kernels_ = &active_kernels();
    if (tile_for(*kernels_, type_) == nullptr)
      return Internal("ggml linear: no kernel for " + std::string(dtype_name(type_)));
    reserve_scratch(n_rows);
    quantize_rows(*kernels_, x, 0, n_rows);
    prepared_rows_ = n_rows;
    return Status::Ok();
  });
}

void QuantLinear::compute(float* y, int64_t begin, int64_t end) noexcept {
  if (kernels_ == nullptr || prepared_rows_ <= 0 || y == nullptr) return;
  output_range(*kernels_, prepared_rows_, y, std::clamp<int64_t>(begin, 0, out_), std::clamp<int64_t>(end, 0, out_));
}

}  // namespace tessera::ggml
