// w8a8_layout.hpp: how the int8 plugin holds an INT8 W8A8 weight in memory.
//
// The file stores W as int8 [out, in], row-major, beside one f32 scale per
// row ("<name>_scale"): W_real[o][k] = scale[o] * W[o][k]. At load the rows
// are repacked into panels of kPanelRows rows; a panel is k_chunks chunks of
// kChunk input columns, each chunk 16 x 64 bytes in the order both AMX-INT8
// and AVX-512 VNNI read:
//   chunk[(k / 4) * 64 + r * 4 + k % 4] = W[panel * 16 + r][chunk * 64 + k]
// One 64-byte line holds 4 consecutive inputs of all 16 rows: a dpbusd with
// 4 activation bytes broadcast adds them to 16 row sums, and the whole chunk
// is one AMX B tile (16 rows of 64 bytes). Rows past `out` and columns past
// `in` are zero, so every kernel runs whole panels and chunks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tessera::int8 {

inline constexpr int kPanelRows = 16;                      // weight rows of a panel
inline constexpr int kChunk = 64;                          // input columns of a chunk
inline constexpr size_t kChunkBytes = kPanelRows * kChunk;  // 1024

// The largest row length whose integer sums cannot overflow i32:
// 127 * 127 * in < 2^31.
inline constexpr int64_t kMaxInFeatures = 131072;

// Below this many weight values (out * in) quantizing and packing run on one
// thread: a fork and join costs microseconds, and calibration's tests and
// small models (the trained Mamba's 256 x 8 projections) have many such weights.
inline constexpr int64_t kParallelWeightValues = int64_t{1} << 16;

// v rounded to the nearest integer, ties to even, for |v| <= 2^22: adding
// and taking away 1.5 * 2^23 leaves the integer (the spacing of floats
// there is 1, and the added constant is even), in plain float arithmetic
// the compiler vectorizes, where std::nearbyint is a libm call on baseline
// x86-64.
#if defined(__FAST_MATH__)
// -ffast-math lets the compiler fold (v + c) - c to v: every value would go
// unrounded into the int8 cast, which truncates.
#error "round_to_even_small needs IEEE float addition: do not build the int8 plugin with -ffast-math"
#endif
inline float round_to_even_small(float v) {
  constexpr float kRound = 12582912.0f;
  return (v + kRound) - kRound;
}

struct PackedWeight {
  int64_t out = 0;       // rows of W
  int64_t in = 0;        // columns of W
  int64_t n_panels = 0;  // ceil(out / 16)
  int64_t k_chunks = 0;  // ceil(in / 64)
  std::vector<int8_t> panels;    // [n_panels][k_chunks][1024], the layout above
  std::vector<int32_t> row_sums;  // [n_panels * 16]: sum over k of W[r][k] (VNNI's unsigned activations)
  std::vector<float> scales;      // [n_panels * 16]: scale[o], 0 past out

  size_t panel_bytes() const { return static_cast<size_t>(k_chunks) * kChunkBytes; }
  const int8_t* panel(int64_t p) const { return panels.data() + static_cast<size_t>(p) * panel_bytes(); }
  // The padded length of an activation row: k_chunks * 64.
  int64_t in_padded() const { return k_chunks * kChunk; }
};

// w: [out, in] int8 row-major; scales: [out].
PackedWeight pack_weight(const int8_t* w, const float* scales, int64_t out, int64_t in);

// W[o][k] read back from the panels (tests).
int8_t packed_value(const PackedWeight& w, int64_t o, int64_t k);

}  // namespace tessera::int8
