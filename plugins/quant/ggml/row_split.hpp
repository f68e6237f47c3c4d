// row_split.hpp: static partition of output rows among OpenMP threads, and
// the parallel region of the quantized-domain drivers' forward().
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace tessera::ggml {

// Below this much weight data (times activation rows) one thread finishes
// before a second one would have been woken: measured with
// bench_quant_kernels (docs/kernels.md).
inline constexpr uint64_t kMinParallelBytes = 32 * 1024;

// Activation rows a driver's forward() quantizes at a time. Its scratch then
// holds at most this many rows whatever the batch (a 512-token prefill would
// otherwise keep 512 quantized rows in every Linear of the model: ~230 MB on
// SmolLM2-135M with two terms). The products already read the weights once
// per 64 activation rows, so this costs only a parallel region per chunk.
inline constexpr int64_t kMaxScratchRows = 64;

struct RowRange {
  int64_t begin;
  int64_t end;
};

// Thread `t` of `n` gets a contiguous range; boundaries fall on multiples of
// `align` (the kernel tile height) so no tile straddles two threads.
inline RowRange split_rows(int64_t total, int64_t align, int t, int n) {
  const int64_t tiles = (total + align - 1) / align;
  const int64_t per = tiles / n, extra = tiles % n;
  const int64_t first = t * per + (t < extra ? t : extra);
  const int64_t count = per + (t < extra ? 1 : 0);
  const int64_t begin = first * align;
  const int64_t end = (first + count) * align;
  return {begin < total ? begin : total, end < total ? end : total};
}

// The products of the repacked drivers (QuantLinear, KQuantLinear) for output
// columns [r_begin, r_end) of n activation rows, as calls
// rows(r0, r1, x_first, nx, weights_cached) of at most kMaxRepackX activation
// rows on column ranges within one weight group of `group_rows`. Up to
// kMaxRepackX rows (decode), one call takes them all, so each group is read
// once for every row; beyond (prefill), each group is read once per chunk of
// kXChunkRows activation rows (~110 KiB of Q8_1/Q8_K rows, kept in L2) and
// used for all of them while it sits in L1: `weights_cached` says so, true
// for every call on a group but a chunk's first (a kernel may then take the
// pair kernels even for a row or two).
inline constexpr int64_t kXChunkRows = 64;
template <class Rows>
void products_in_groups(int64_t n, int64_t r_begin, int64_t r_end, int64_t group_rows, int max_x, Rows&& rows) {
  if (n <= max_x) {
    rows(r_begin, r_end, int64_t{0}, static_cast<int>(n), false);
    return;
  }
  for (int64_t x0 = 0; x0 < n; x0 += kXChunkRows) {
    const int64_t x1 = std::min(n, x0 + kXChunkRows);
    for (int64_t r = r_begin; r < r_end; r += group_rows) {
      const int64_t r1 = std::min(r_end, r + group_rows);
      for (int64_t xi = x0; xi < x1; xi += max_x)
        rows(r, r1, xi, static_cast<int>(std::min<int64_t>(max_x, x1 - xi)), /*weights_cached=*/xi != x0);
    }
  }
}

// One parallel region (if `parallel`): each thread quantizes its share of the
// n_rows activation rows, quantize(begin, end); all wait; then each computes
// its share of the `out` output rows, output(begin, end), split on multiples
// of `align` so no tile or repacked group straddles two threads.
template <class Quantize, class Output>
void quantize_then_split(int64_t n_rows, int64_t out, int64_t align, bool parallel, Quantize&& quantize,
                         Output&& output) {
#pragma omp parallel if (parallel)
  {
    const int nt = omp_get_num_threads();
    const int t = omp_get_thread_num();
    const RowRange xr = split_rows(n_rows, 1, t, nt);
    quantize(xr.begin, xr.end);
    if (nt > 1) {
#pragma omp barrier
    }
    const RowRange wr = split_rows(out, align, t, nt);
    output(wr.begin, wr.end);
  }
}

// A quantized-domain driver's forward(): x [n_rows, in] -> y [n_rows, out]
// in chunks of at most kMaxScratchRows activation rows, each one parallel
// region (when its weight bytes times rows pay for it): quantize(xc, b, e)
// quantizes rows [b, e) of the chunk xc, output(rows, yc, b, e) writes output
// columns [b, e) of its `rows` rows to yc; `align` as in quantize_then_split.
template <class Quantize, class Output>
void forward_in_chunks(const float* x, float* y, int64_t n_rows, int64_t in, int64_t out, uint64_t weight_bytes,
                       int64_t align, Quantize&& quantize, Output&& output) {
  for (int64_t x0 = 0; x0 < n_rows; x0 += kMaxScratchRows) {
    const int64_t rows = std::min(kMaxScratchRows, n_rows - x0);
    const float* xc = x + x0 * in;
    float* yc = y + x0 * out;
    const bool parallel = weight_bytes * static_cast<uint64_t>(rows) >= kMinParallelBytes;
    quantize_then_split(
        rows, out, align, parallel, [&](int64_t b, int64_t e) { quantize(xc, b, e); },
        [&](int64_t b, int64_t e) { output(rows, yc, b, e); });
  }
}

}  // namespace tessera::ggml
