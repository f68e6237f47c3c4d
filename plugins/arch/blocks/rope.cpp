#include "tessera/blocks/rope.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

namespace tessera::blocks {

std::string validate_rope(const RopeConfig& c) {
  if (c.head_dim <= 0 || c.head_dim % 2 != 0)
    return "RoPE needs an even head_dim, got " + std::to_string(c.head_dim);
  if (!(c.freq_base > 0.0)) return "rope_freq_base must be positive, got " + std::to_string(c.freq_base);
  if (c.style != RopeStyle::adjacent && c.style != RopeStyle::neox)
    return "unknown RoPE style " + std::to_string(static_cast<uint32_t>(c.style));
  switch (c.scaling) {
    case RopeScaling::none:
      return {};
    case RopeScaling::linear:
      if (!(c.scaling_factor > 0.0))
        return "linear RoPE scaling needs a positive factor, got " + std::to_string(c.scaling_factor);
      return {};
    case RopeScaling::llama3:
      if (!(c.scaling_factor > 0.0))
        return "llama3 RoPE scaling needs a positive factor, got " + std::to_string(c.scaling_factor);
      if (c.original_context <= 0) return "llama3 RoPE scaling needs the original context length";
      if (!(c.high_freq_factor > c.low_freq_factor) || !(c.low_freq_factor > 0.0))
        return "llama3 RoPE scaling needs 0 < low_freq_factor < high_freq_factor, got " +
               std::to_string(c.low_freq_factor) + " and " + std::to_string(c.high_freq_factor);
      return {};
    case RopeScaling::yarn:
      return "YaRN RoPE scaling is not supported";
  }
  return "unknown RoPE scaling " + std::to_string(static_cast<uint32_t>(c.scaling));
}

std::vector<double> rope_frequencies(const RopeConfig& c) {
  const int32_t half = c.head_dim / 2;
  std::vector<double> freqs(static_cast<size_t>(half));
  for (int32_t i = 0; i < half; ++i)
    freqs[i] = std::pow(c.freq_base, -2.0 * i / static_cast<double>(c.head_dim));

  if (c.scaling == RopeScaling::linear) {
    for (double& f : freqs) f /= c.scaling_factor;
  } else if (c.scaling == RopeScaling::llama3) {
    const double old_ctx = static_cast<double>(c.original_context);
    const double low_freq_wavelen = old_ctx / c.low_freq_factor;
    const double high_freq_wavelen = old_ctx / c.high_freq_factor;
    for (double& f : freqs) {
      const double wavelen = 2.0 * std::numbers::pi / f;
      if (wavelen < high_freq_wavelen) continue;  // high frequencies: unchanged
      if (wavelen > low_freq_wavelen) {           // low frequencies: fully scaled
        f /= c.scaling_factor;
        continue;
      }
      const double smooth =
          (old_ctx / wavelen - c.low_freq_factor) / (c.high_freq_factor - c.low_freq_factor);
      f = (1.0 - smooth) * f / c.scaling_factor + smooth * f;
    }
  }
  return freqs;
}

RopeTable::RopeTable(const RopeConfig& config, int64_t max_positions)
    : config_(config), freqs_(rope_frequencies(config)), max_positions_(max_positions) {}

void RopeTable::ensure(int64_t n_positions) {
  n_positions = std::min(n_positions, max_positions_);
  if (n_positions <= n_positions_) return;
  // Doubling keeps the number of regrowths logarithmic over a long generation.
  const int64_t target = std::min(max_positions_, std::max(n_positions, 2 * n_positions_));
  const size_t half = freqs_.size();
  cos_.resize(static_cast<size_t>(target) * half);
  sin_.resize(static_cast<size_t>(target) * half);
  for (int64_t p = n_positions_; p < target; ++p) {
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * freqs_[i];
      cos_[p * half + i] = static_cast<float>(std::cos(angle));
      sin_[p * half + i] = static_cast<float>(std::sin(angle));
    }
  }
  n_positions_ = target;
}

void RopeTable::apply(float* x, int32_t n_heads, int64_t pos) const {
  const int32_t half = config_.head_dim / 2;
  const float* cs = cos_.data() + pos * half;  // [half]
  const float* sn = sin_.data() + pos * half;  // [half]
  for (int32_t h = 0; h < n_heads; ++h) {
    float* v = x + static_cast<int64_t>(h) * config_.head_dim;  // [head_dim]
    if (config_.style == RopeStyle::adjacent) {
      for (int32_t i = 0; i < half; ++i) {
        const float a = v[2 * i], b = v[2 * i + 1];
        v[2 * i] = a * cs[i] - b * sn[i];
        v[2 * i + 1] = a * sn[i] + b * cs[i];
      }
    } else {
      for (int32_t i = 0; i < half; ++i) {
        const float a = v[i], b = v[i + half];
        v[i] = a * cs[i] - b * sn[i];
        v[i + half] = a * sn[i] + b * cs[i];
      }
    }
  }
}

}  // namespace tessera::blocks
