#include "w8a8_layout.hpp"

#include <cstring>

namespace tessera::int8 {

namespace {

size_t offset_in_panel(int64_t r, int64_t k) {
  const int64_t chunk = k / kChunk, kk = k % kChunk;
  return static_cast<size_t>(chunk) * kChunkBytes + static_cast<size_t>((kk / 4) * 64 + r * 4 + kk % 4);
}

}  // namespace

PackedWeight pack_weight(const int8_t* w, const float* scales, int64_t out, int64_t in) {
  PackedWeight p;
  p.out = out;
  p.in = in;
  p.n_panels = (out + kPanelRows - 1) / kPanelRows;
  p.k_chunks = (in + kChunk - 1) / kChunk;
  p.panels.assign(static_cast<size_t>(p.n_panels) * p.panel_bytes(), 0);
  p.row_sums.assign(static_cast<size_t>(p.n_panels * kPanelRows), 0);
  p.scales.assign(static_cast<size_t>(p.n_panels * kPanelRows), 0.0f);
  // Each row writes its own bytes of its panel: rows in parallel. Inputs go
  // four at a time (one 4-byte slot of the layout); a row's last inputs,
  // past a multiple of 4, one at a time.
#pragma omp parallel for schedule(static) if (out * in >= kParallelWeightValues)
  for (int64_t o = 0; o < out; ++o) {
    int8_t* panel = p.panels.data() + static_cast<size_t>(o / kPanelRows) * p.panel_bytes();
    const int8_t* row = w + o * in;
    const int64_t r = o % kPanelRows;
    int32_t sum = 0;
    for (int64_t k = 0; k < in; ++k) sum += row[k];
    int64_t k = 0;
    for (; k + 4 <= in; k += 4) std::memcpy(panel + offset_in_panel(r, k), row + k, 4);
    for (; k < in; ++k) panel[offset_in_panel(r, k)] = row[k];
    p.row_sums[static_cast<size_t>(o)] = sum;
    p.scales[static_cast<size_t>(o)] = scales[o];
  }
  return p;
}

int8_t packed_value(const PackedWeight& w, int64_t o, int64_t k) {
  return w.panel(o / kPanelRows)[offset_in_panel(o % kPanelRows, k)];
}

}  // namespace tessera::int8
