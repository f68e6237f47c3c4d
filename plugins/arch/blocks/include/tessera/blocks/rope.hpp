// tessera/blocks/rope.hpp: rotary position embedding (RoPE) for the Llama family.
//
// A head vector of `head_dim` values is split into head_dim/2 pairs; pair i is
// rotated by the angle pos * freq[i]. Which values form pair i depends on the
// style: adjacent -> (2i, 2i+1) (GGUF llama files, whose Q/K rows are stored
// permuted for it), neox -> (i, i + head_dim/2) (Hugging Face layout, GGUF qwen2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::blocks {

// How RoPE pairs dimensions. GGUF "llama" files store Q/K rows permuted for
// adjacent pairs (x[2i], x[2i+1]); Hugging Face checkpoints and GGUF qwen2 use
// the "neox" split halves (x[i], x[i + d/2]).
enum class RopeStyle : uint32_t { adjacent = 0, neox = 1 };
enum class RopeScaling : uint32_t { none = 0, linear = 1, llama3 = 2, yarn = 3 };

struct RopeConfig {
  int32_t head_dim = 0;  // even
  double freq_base = 10000.0;
  RopeStyle style = RopeStyle::adjacent;
  RopeScaling scaling = RopeScaling::none;
  double scaling_factor = 1.0;
  int64_t original_context = 0;  // llama3 only
  double low_freq_factor = 1.0;  // llama3 only
  double high_freq_factor = 4.0; // llama3 only
};

// The rotation frequency of each pair: base^(-2i/head_dim), then scaled.
//  * linear: positions are divided by the factor, folded here into freq / factor.
//  * llama3: wavelengths shorter than original_context / high_freq_factor keep
//    their frequency, those longer than original_context / low_freq_factor are
//    divided by the factor, and the band between blends the two with
//    smooth = (original_context / wavelength - low) / (high - low).
// Returns head_dim/2 values. The caller validates the config (validate_rope).
std::vector<double> rope_frequencies(const RopeConfig& config);

// Empty when the config is usable, else the reason (unsupported scaling, odd head_dim...).
std::string validate_rope(const RopeConfig& config);

// cos/sin of every (position, pair), computed once per position in double
// precision and kept; grows (doubling) up to max_positions as later positions appear.
class RopeTable {
 public:
  RopeTable(const RopeConfig& config, int64_t max_positions);

  // Make positions [0, n_positions) available. n_positions <= max_positions.
  void ensure(int64_t n_positions);
  int64_t n_positions() const { return n_positions_; }

  // Rotate n_heads consecutive head vectors x[n_heads, head_dim] in place at `pos`.
  // Requires pos < n_positions().
  void apply(float* x, int32_t n_heads, int64_t pos) const;

 private:
  RopeConfig config_;
  std::vector<double> freqs_;  // [head_dim / 2]
  int64_t max_positions_ = 0;
  int64_t n_positions_ = 0;
  std::vector<float> cos_;     // [n_positions, head_dim / 2]
  std::vector<float> sin_;     // [n_positions, head_dim / 2]
};

}  // namespace tessera::blocks
