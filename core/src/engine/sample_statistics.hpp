// sample_statistics.hpp: the summaries the engine reports over samples
// (request latencies, per-token scores), computed one way everywhere.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace tessera {

// The p-th percentile (p in [0, 100]) of a sample, interpolating linearly
// between the two nearest ranks (the median of an even count is the mean of
// the middle two, as llama.cpp's tools report); 0 for an empty sample.
inline double percentile(std::vector<double> sample, double p) {
  if (sample.empty()) return 0;
  std::sort(sample.begin(), sample.end());
  const double rank = p / 100.0 * static_cast<double>(sample.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const auto hi = std::min(lo + 1, sample.size() - 1);
  return sample[lo] + (sample[hi] - sample[lo]) * (rank - static_cast<double>(lo));
}

// A running mean and the standard error of that mean (the sample's standard
// deviation over √n), treating the values as independent. Welford's update:
// a sum of squares less n·mean² cancels to noise where the spread is far
// below the mean (a nearly constant per-token loss).
class MeanEstimate {
 public:
  void add(double x) {
    ++n_;
    const double delta = x - mean_;
    mean_ += delta / static_cast<double>(n_);
    squared_deviations_ += delta * (x - mean_);
  }
  int64_t count() const { return n_; }
  double mean() const { return mean_; }
  double standard_error() const {
    if (n_ < 2) return 0.0;
    const auto n = static_cast<double>(n_);
    return std::sqrt(squared_deviations_ / (n - 1) / n);
  }

 private:
  double mean_ = 0, squared_deviations_ = 0;
  int64_t n_ = 0;
};

}  // namespace tessera
