// float_linear.cpp: f32-domain driver for plain-float and block-format weights.
#include "float_linear.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <vector>

#include "dequantize_fast.hpp"
#include "kernels.hpp"
#include "reference.hpp"
#include "row_split.hpp"

namespace tessera::ggml {
namespace {

constexpr int64_t kXChunk = 32;                     // activation rows kept in L2 per pass over the weights
// Plain-float weights go through the tiles from this many activation rows:
// f16/bf16 rows must first be widened into scratch, which costs more than it
// saves below four rows (an 8960 x 1536 f16 matrix, 2 threads, Zen 3: 2 rows
// 1.2-1.4 ms by dots against 2.0-2.2 tiled, 4 rows 2.3-2.8 against 2.3-2.4,
// 32 rows 15-16 against 11-13); f32 rows are tiled where they lie and win
// from two (2 rows 2.5-3.1 ms against 2.1).
int64_t min_tiled_rows(DType type) { return type == DType::f32 ? 2 : 4; }
// The level's block x f32 kernel for this format, or nullptr (K-quants, plain
// floats). With one activation row (a single sequence's decode step) it dots
// Q4_0/Q4_1/Q8_0 rows straight from their blocks; with more, forward()
// dequantizes a few weight rows at a time and reuses them for every activation
// row through f32 tiles. Both give the same bits. Straight from the blocks,
// f32-mode decode went from 51-63 to 128-172 tokens/s on the default model.
FloatDotFn fused_block_dot(const KernelTable& k, DType type) {
  switch (type) {
    case DType::q4_0: return k.q4_0_f32;
    case DType::q4_1: return k.q4_1_f32;
    case DType::q8_0: return k.q8_0_f32;
    default: return nullptr;
  }
}

// Each OpenMP thread's widened weight rows, shared by every FloatLinear (a
// thread runs one forward at a time): one per Linear would hold threads x 4 x
// in floats for each of a model's Linears, about 0.5 GB for a 1.5B f16 model
// on 64 threads. Null when it cannot grow.
float* thread_rows_scratch(size_t floats) noexcept {
  thread_local std::vector<float> scratch;
  if (scratch.size() < floats) {
    try {
      scratch.resize(floats);
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }
  return scratch.data();
}

}  // namespace

FloatLinear::FloatLinear(const void* weights, DType type, int64_t out_features, int64_t in_features,
                         std::vector<float> bias)
    : weights_(static_cast<const uint8_t*>(weights)),
      type_(type),
      out_(out_features),
      in_(in_features),
      row_bytes_(dtype_row_bytes(type, static_cast<uint64_t>(in_features))),
      bias_(std::move(bias)) {}

Status FloatLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  if (n_rows <= 0) return n_rows == 0 ? Status::Ok() : InvalidArgument("ggml linear: negative row count");
  if (x == nullptr || y == nullptr) return InvalidArgument("ggml linear: null input or output");
  return guard([&]() -> Status {
    const KernelTable& k = active_kernels();
    FloatDotFn dot = k.f32;
    if (type_ == DType::f16) dot = k.f16;
    if (type_ == DType::bf16) dot = k.bf16;
    const FloatDotFn fused = n_rows == 1 ? fused_block_dot(k, type_) : nullptr;
    if (fused != nullptr) dot = fused;
    // Tiled: kMaxFloatTileW weight rows at a time are widened to f32 once per
    // chunk of activation rows (f32 rows are used where they lie) and
    // multiplied with every activation row of the chunk by f32 tiles. Block
    // formats without a fused dot always go this way. Plain floats do with
    // enough activation rows (prefill, verifying drafts; min_tiled_rows): a
    // lone dot waits on its two accumulator chains and widens the row again
    // for every activation row, while a tile keeps 2 NW chains in flight.
    // With one row (a decode step) the dot reads each weight once, as fast as
    // memory allows. The tiles sum in the dot's order when in_ is a multiple
    // of 32 (kernels.hpp), so each row gets the bits it gets alone, whichever
    // way its batch went.
    // f16/bf16 rows with a level's half tiles (AVX-512) skip the scratch:
    // they are widened in registers, once per tile of activation rows, from
    // two activation rows on (two dots would each wait on their chains).
    HalfTileFn half_tile = nullptr;
    if (type_ == DType::f16) half_tile = k.f16_tile;
    if (type_ == DType::bf16) half_tile = k.bf16_tile;
    const bool half_tiled = half_tile != nullptr && n_rows >= 2 && in_ % 32 == 0;
    const bool tiled = is_block_format(type_) ? fused == nullptr
                                              : !half_tiled && n_rows >= min_tiled_rows(type_) && in_ % 32 == 0;
    const bool widen = tiled && type_ != DType::f32;
    const bool parallel = weight_bytes() * static_cast<uint64_t>(n_rows) >= kMinParallelBytes;
    const int max_threads = parallel ? omp_get_max_threads() : 1;
    const size_t tile_floats = static_cast<size_t>(kMaxFloatTileW) * static_cast<size_t>(in_);
    std::atomic<bool> out_of_memory{false};

#pragma omp parallel if (parallel) num_threads(max_threads)
    {
      const int nt = omp_get_num_threads();
      const int t = omp_get_thread_num();
      const RowRange wr = split_rows(out_, 1, t, nt);
      float* scratch = widen ? thread_rows_scratch(tile_floats) : nullptr;  // [kMaxFloatTileW, in]
      const bool can_run = !widen || scratch != nullptr;
      if (!can_run) out_of_memory = true;
      for (int64_t x0 = 0; can_run && x0 < n_rows; x0 += kXChunk) {
        const int64_t x1 = std::min(n_rows, x0 + kXChunk);
        if (half_tiled) {
          const size_t stride = row_bytes_ / sizeof(uint16_t);  // elements
          for (int64_t r = wr.begin; r < wr.end; r += kMaxHalfTileW) {
            const int nw = static_cast<int>(std::min<int64_t>(kMaxHalfTileW, wr.end - r));
            const auto* rows = reinterpret_cast<const uint16_t*>(weights_ + r * row_bytes_);  // [nw, in]
            for (int64_t i = x0; i < x1; i += kMaxHalfTileX) {
              const int nx = static_cast<int>(std::min<int64_t>(kMaxHalfTileX, x1 - i));
              half_tile(rows, stride, nw, x + i * in_, in_, nx, in_, y + i * out_ + r, out_);
            }
          }
          continue;
        }
        if (!tiled) {
          for (int64_t r = wr.begin; r < wr.end; ++r)
            for (int64_t i = x0; i < x1; ++i) y[i * out_ + r] = dot(weights_ + r * row_bytes_, x + i * in_, in_);
          continue;
        }
        for (int64_t r = wr.begin; r < wr.end; r += kMaxFloatTileW) {
          const int nw = static_cast<int>(std::min<int64_t>(kMaxFloatTileW, wr.end - r));
          const float* rows = reinterpret_cast<const float*>(weights_ + r * row_bytes_);  // [nw, in]
          if (widen) {
            for (int j = 0; j < nw; ++j) {
              const void* w = weights_ + (r + j) * row_bytes_;
              float* row = scratch + static_cast<size_t>(j) * in_;
              if (!dequantize_row_fast(type_, w, row, in_)) dequantize_row(type_, w, row, in_);
            }
            rows = scratch;
          }
          for (int64_t i = x0; i < x1; i += kMaxFloatTileX) {
            const int nx = static_cast<int>(std::min<int64_t>(kMaxFloatTileX, x1 - i));
            k.f32_tile(rows, in_, nw, x + i * in_, in_, nx, in_, y + i * out_ + r, out_);
          }
        }
      }
    }
    if (out_of_memory) return OutOfMemory("ggml linear: no memory for widened weight rows");
    if (!bias_.empty()) {
      for (int64_t i = 0; i < n_rows; ++i)
        for (int64_t r = 0; r < out_; ++r) y[i * out_ + r] += bias_[static_cast<size_t>(r)];
    }
    return Status::Ok();
  });
}

}  // namespace tessera::ggml
