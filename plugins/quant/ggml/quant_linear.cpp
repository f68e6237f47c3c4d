// quant_linear.cpp: the matrix-vector (decode) and matrix-matrix (prefill) drivers.
#include "quant_linear.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "kernels.hpp"
#include "prefetch_choice.hpp"
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

// Term rows from which a call takes the block panels (a tile is 16). Each
// call turns every weight block of its groups signed once for all its
// activation tiles, and every tile's sums leave through memory, so with few
// tiles the VNNI groups win. Sapphire Rapids VM, 2 threads, two terms,
// prefill tok/s against the build without panels, alternating: panels from
// 16 term rows, a 16-token prompt (32 term rows), SmolLM2-135M Q4_1 828-874
// against 903-908 (three rounds); from 64, 32 tokens (64 term rows)
// 1092-1111 against 1057-1082 and Qwen2.5-Coder-0.5B (mostly Q5_0) 411-417
// against 354, 64 tokens 1227-1275 against 1143-1145 and 490-492 against
// 391-405 (two rounds).
constexpr size_t kMinBlockPanelRows = 64;

RepackPanelFn repacked_panel_kernel(const KernelTable& k, DType type) {
  switch (type) {
    case DType::q4_0: return k.q4_0x16_panel;
    case DType::q4_1: return k.q4_1x16_panel;
    case DType::q8_0: return k.q8_0x16_panel;
    case DType::q5_0: return k.q5_0x16_panel;
    case DType::q5_1: return k.q5_1x16_panel;
    default: return nullptr;
  }
}

RepackPanelFn QuantLinear::panel_kernel(const KernelTable& k) const {
  return group_rows_ == kWideRepackRows && repacked_rows_ > 0 ? repacked_panel_kernel(k, type_) : nullptr;
}

void QuantLinear::rows(const KernelTable& k, int64_t r0, int64_t r1, const BlockQ8_1* xq,
                       const ActivationScales* xs, int nx, float* y, int64_t y_stride, StreamAhead ahead) const {
  const int64_t nb = in_ / kBlock;
  const RepackTileFn group = repacked_rows_ > 0 ? group_kernel(k) : nullptr;
  const int64_t packed_end = group != nullptr ? repacked_rows_ : 0;  // no kernel for the layout: the ggml rows
  const QuantTileFn tile = tile_for(k, type_);
  const auto ys = static_cast<size_t>(y_stride);
  int64_t r = r0;
  for (; r < r1 && r + group_rows_ <= packed_end; r += group_rows_) {
    group(repacked_.data + r * row_bytes_, nb, xq, xs, static_cast<size_t>(nb), nx, y + (r - r0), ys, ahead);
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
  const int64_t m = terms_ * (in_ / kBlock);  // blocks per row, both terms: [terms, nb]
  ActivationScales* xs = repacked_rows_ > 0 ? x_scales_.data() : nullptr;
  // The layouts whose kernels take the quant sums (q_offset); the others read none.
  const int32_t excess = repacked_quant_excess(type_, group_rows_ == kWideRepackRows);
  const int64_t nb = in_ / kBlock;
  for (int64_t i = row_begin; i < row_end; ++i) {
    k.quantize_activation_row(x + i * in_, in_, static_cast<int>(terms_), excess, x_q8_.data() + i * m,
                              xs == nullptr ? nullptr : xs + i * m);
    if (!fill_panel_) continue;
    for (int64_t t = 0; t < terms_; ++t)
      block_tile_quants(x_q8_.data() + i * m + t * nb, xs + i * m + t * nb, nb, i * terms_ + t, x_tiles_);
  }
}

void QuantLinear::products(const KernelTable& k, int64_t n, float* y, int64_t y_stride, int64_t r_begin,
                           int64_t r_end, StreamAhead ahead) const {
  const int64_t nb = in_ / kBlock;
  const BlockQ8_1* xq = x_q8_.data();
  const ActivationScales* xs = repacked_rows_ > 0 ? x_scales_.data() : nullptr;
  const auto groups = [&](int64_t count, int64_t x_first, int64_t c_begin, int64_t c_end) {
    products_in_groups(count, c_begin, c_end, group_rows_, kMaxRepackX,
                       [&](int64_t r0, int64_t r1, int64_t x0, int nx, bool weights_cached) {
                         const int64_t xi = x_first + x0;
                         rows(k, r0, r1, xq + xi * nb, xs == nullptr ? nullptr : xs + xi * nb, nx,
                              y + xi * y_stride + (r0 - r_begin), y_stride, weights_cached ? StreamAhead{} : ahead);
                       });
  };
  // Panels (AMX): each 16-row group by every whole tile of 16 activation
  // rows; the rows past the last tile take the group kernels, the columns
  // past the last group (not repacked) the tiles on the ggml rows (rows()).
  const RepackPanelFn panel = fill_panel_ ? panel_kernel(k) : nullptr;
  const int64_t tiled = n / kPanelTileX * kPanelTileX;
  if (panel == nullptr || n < static_cast<int64_t>(kMinBlockPanelRows)) {  // a forward()'s last chunk may be short
    groups(n, 0, r_begin, r_end);
    return;
  }
  int64_t r = r_begin;  // a multiple of 16 (column_alignment)
  for (; r + kWideRepackRows <= std::min(r_end, repacked_rows_); r += kWideRepackRows)
    panel(repacked_.data + r * row_bytes_, nb, x_tiles_, static_cast<int>(tiled), y + (r - r_begin),
          static_cast<size_t>(y_stride));
  if (tiled < n && r > r_begin) groups(n - tiled, tiled, r_begin, r);
  if (r < r_end) groups(n, 0, r, r_end);
}

void QuantLinear::output_range(const KernelTable& k, int64_t n_rows, float* y, int64_t r_begin, int64_t r_end) const {
  // Rows [r_begin, r_end) are this thread's stream of weights when all its
  // activation rows fit one pass over them (decode, a verification, a small
  // batch): then the kernels may prefetch ahead, up to the stream's end, and
  // the thread times the call for the prefetch choice. A prefill's chunks
  // find the weights in cache and would tell it nothing.
  const int64_t packed_end = std::min(r_end, repacked_rows_);
  const bool streams = packed_end > r_begin && terms_ * n_rows <= kMaxRepackX;
  const StreamAhead ahead = streams ? StreamAhead{prefetch_choice().ahead_bytes(),
                                                  reinterpret_cast<uintptr_t>(repacked_.data + packed_end * row_bytes_)}
                                    : StreamAhead{};
  const auto start = std::chrono::steady_clock::now();
  output_columns(terms_, n_rows, out_, y, bias_, r_begin, r_end,
                 [&](int64_t n, float* dst, int64_t stride, int64_t b, int64_t e) {
                   products(k, n, dst, stride, b, e, ahead);
                 });
  if (!streams) return;
  const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
  note_streamed(static_cast<uint64_t>(packed_end - r_begin) * row_bytes_, static_cast<uint64_t>(elapsed.count()),
                ahead.bytes != 0);
}

void QuantLinear::reserve_scratch(const KernelTable& k, int64_t n_rows) {
  // Steady state: no allocation (every buffer grows, never shrinks).
  const auto grow = [](auto& v, int64_t size) {
    if (v.size() < static_cast<size_t>(size)) v.resize(static_cast<size_t>(size));
  };
  const int64_t nb = in_ / kBlock;
  grow(x_q8_, n_rows * terms_ * nb);
  if (repacked_rows_ > 0) grow(x_scales_, n_rows * terms_ * nb);
  // The panels from kMinBlockPanelRows term rows a call; fewer take the groups.
  const auto term_rows = static_cast<size_t>(n_rows * terms_);
  fill_panel_ = panel_kernel(k) != nullptr && term_rows >= kMinBlockPanelRows;
  if (!fill_panel_ || term_rows <= x_tiles_.rows) return;
  // Room for a whole chunk of forward() at once, so batches that grow a row
  // at a time do not allocate on every call.
  const size_t rows = std::max(term_rows, static_cast<size_t>(kMaxScratchRows * terms_));
  x_tiles_memory_ = HostBuffer(block_tile_bytes(nb, rows));
  x_tiles_ = block_tiles(x_tiles_memory_.data(), nb, rows);
}

Status QuantLinear::forward(const float* x, float* y, int64_t n_rows) noexcept {
  if (n_rows <= 0) return n_rows == 0 ? Status::Ok() : InvalidArgument("ggml linear: negative row count");
  if (x == nullptr || y == nullptr) return InvalidArgument("ggml linear: null input or output");
  return guard([&]() -> Status {
    const KernelTable& k = active_kernels();  // read per call so a forced level applies at once
    if (tile_for(k, type_) == nullptr) return Internal("ggml linear: no kernel for " + std::string(dtype_name(type_)));
    reserve_scratch(k, std::min(n_rows, kMaxScratchRows));
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
    reserve_scratch(*kernels_, n_rows);
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
