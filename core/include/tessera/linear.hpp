// tessera/linear.hpp: y = x·Wᵀ (+ b) for one stored weight, in whatever format it is stored.
//
// Made by a Quantizer for a weight of shape [out_features, in_features]. The
// implementation may keep pointers into the memory-mapped weights; it must not
// outlive the WeightStore it was made from. forward() may use OpenMP threads;
// calls on one Linear must not overlap (the engine runs one step at a time).
#pragma once

#include <cstdint>

#include "tessera/status.hpp"

namespace tessera {

class Linear {
 public:
  virtual ~Linear() = default;
  virtual int64_t in_features() const = 0;
  virtual int64_t out_features() const = 0;
  // x: [n_rows, in_features] f32, row-major; y: [n_rows, out_features] f32.
  virtual Status forward(const float* x, float* y, int64_t n_rows) noexcept = 0;
  // Bytes of weight data read by one forward (for roofline figures).
  virtual uint64_t weight_bytes() const = 0;
};

}  // namespace tessera
