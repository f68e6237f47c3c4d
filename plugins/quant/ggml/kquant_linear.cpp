// kquant_linear.cpp: the K-quant drivers, decode (one activation row) and
// prefill (many) alike: tiles of 4 weight rows by up to 4 activation rows.
#include "kquant_linear.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "reference.hpp"
#include "row_split.hpp"

namespace tessera::ggml {
namespace {

// Activation rows per chunk: the chunk's Q8_K rows (64 x 1536 values: ~110
// KiB) stay in L2 while every weight tile of the thread's range passes by.
constexpr int64_t kXChunk = 64;

}  // namespace

KQuantLinear::KQuantLinear(const void* weights, DType type, int64_t out_features, int64_t in_features,
                           std::vector<float> bias, ActivationTerms terms)
    : weights_(static_cast<const uint8_t*>(weights)),
      type_(type),
      out_(out_features),
      in_(in_features),
      row_bytes_(dtype_row_bytes(type, static_cast<uint64_t>(in_features))),
      bias_(std::move(bias)),
      terms_(static_cast<int64_t>(terms)) {
  if (type != DType::q4_k && type != DType::q5_k && type != DType::q6_k)
    throw std::invalid_argument("KQuantLinear: not a K-quant type: " + std::string(dtype_name(type)));
  if (in_features % kSuperBlock != 0)
    throw std::invalid_argument("KQuantLinear: rows of " + std::to_string(in_features) + " are not whole super-blocks");
}

KQuantTileFn KQuantLinear::tile(const KernelTable& k) const {
  switch (type_) {
    case DType::q4_k: return k.q4_k;
    case DType::q5_k: return k.q5_k;
    default: return k.q6_k;
  }
}

void KQuantLinear::reserve_scratch(int64_t n_rows) {
  const auto needed = static_cast<size_t>(n_rows * terms_ * (in_ / kSuperBlock));
  if (x_q8k_.size() < needed) x_q8k_.resize(needed);  // steady state: no allocation
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
  }
}

void KQuantLinear::output_range(KQuantTileFn tile, int64_t n_rows, float* y, int64_t r_begin, int64_t r_end) const {
  output_columns(terms_, n_rows, out_, y, bias_, r_begin, r_end,
                 [&](int64_t n, float* dst, int64_t stride, int64_t b, int64_t e) { products(tile, n, dst, stride, b, e); });
}

void KQuantLinear::products(KQuantTileFn tile, int64_t n_rows, float* y, int64_t y_stride, int64_t r_begin,
                            int64_t r_end) const {
  const int64_t nb = in_ / kSuperBlock;
  for (int64_t x0 = 0; x0 < n_rows; x0 += kXChunk) {
    const int64_t x1 = std::min(n_rows, x0 + kXChunk);
    for (int64_t r = r_begin; r < r_end; r += kMaxTileW) {
      const int nw = static_cast<int>(std::min<int64_t>(kMaxTileW, r_end - r));
      for (int64_t xi = x0; xi < x1; xi += kMaxTileX) {
        const int nx = static_cast<int>(std::min<int64_t>(kMaxTileX, x1 - xi));
        tile(weights_ + r * row_bytes_, row_bytes_, nw, x_q8k_.data() + xi * nb, static_cast<size_t>(nb), nx, nb,
             y + xi * y_stride + (r - r_begin), static_cast<size_t>(y_stride));
      }
    }
  }
}

Status KQuantLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  if (n_rows <= 0) return n_rows == 0 ? Status::Ok() : InvalidArgument("ggml K-quant linear: negative row count");
  if (x == nullptr || y == nullptr) return InvalidArgument("ggml K-quant linear: null input or output");
  return guard([&]() -> Status {
    const KernelTable& k = active_kernels();  // read per call so a forced level applies at once
    const KQuantTileFn t = tile(k);
    reserve_scratch(std::min(n_rows, kMaxScratchRows));
    forward_in_chunks(
        x, y, n_rows, in_, out_, weight_bytes(), kMaxTileW,
        [&](const float* xc, int64_t b, int64_t e) { quantize_rows(k, xc, b, e); },
        [&](int64_t rows, float* yc, int64_t b, int64_t e) { output_range(t, rows, yc, b, e); });
    return Status::Ok();
  });
}

Status KQuantLinear::prepare(const float* x, int64_t n_rows) noexcept {
  if (n_rows <= 0) return InvalidArgument("ggml K-quant linear: prepare needs at least one row");
  if (x == nullptr) return InvalidArgument("ggml K-quant linear: null input");
  return guard([&]() -> Status {
    const KernelTable& k = active_kernels();
    prepared_tile_ = tile(k);
    reserve_scratch(n_rows);
    quantize_rows(k, x, 0, n_rows);
    prepared_rows_ = n_rows;
    return Status::Ok();
  });
}

void KQuantLinear::compute(float* y, int64_t begin, int64_t end) noexcept {
  if (prepared_tile_ == nullptr || prepared_rows_ <= 0 || y == nullptr) return;
  output_range(prepared_tile_, prepared_rows_, y, std::clamp<int64_t>(begin, 0, out_), std::clamp<int64_t>(end, 0, out_));
}

}  // namespace tessera::ggml
