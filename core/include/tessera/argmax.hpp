// tessera/argmax.hpp: the most likely token of a row of logits. Shared by the
// greedy strategy, the sampling strategy's temperature-0 path and `tessera
// bench`, so that all pick the same token at the same cost.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <string>

#include "tessera/status.hpp"

namespace tessera {

namespace argmax_detail {
// Flips the magnitude bits of a negative value (sign bit set), keeps the rest:
// its own inverse, and the same map between float bits and order keys.
inline int32_t flip_negative(int32_t bits) { return bits ^ ((bits >> 31) & 0x7FFFFFFF); }
}  // namespace argmax_detail

// An integer with the order of the float's value: the sign-magnitude bits of a
// negative float, flipped, count down as the value falls. -0.0 keys below
// +0.0, which compare equal as floats (argmax_token's index pass treats them
// as the tie they are).
inline int32_t float_order_key(float v) { return argmax_detail::flip_negative(std::bit_cast<int32_t>(v)); }
// The float whose key float_order_key gave.
inline float float_from_order_key(int32_t key) { return std::bit_cast<float>(argmax_detail::flip_negative(key)); }

// The id of the largest logit. Ties go to the lowest id, so the choice does not
// depend on how a kernel happened to order equal values. NaN is an error (it
// would otherwise never win and silently hide a broken forward pass).
inline Result<int32_t> argmax_token(std::span<const float> logits) {
  if (logits.empty()) return Status(InvalidArgument("decoding: the logits are empty (vocab_size 0)"));
  // Two vectorizable passes (the largest value and whether any is NaN, then
  // its first index) instead of one loop-carried compare per logit: a batch
  // of 8 over a 49k vocabulary is otherwise ~1% of a decode step, serial. The
  // maximum is taken over integer keys: compilers vectorize an integer max
  // reduction as it stands, a float one only under -ffast-math's assumptions
  // (or a forced `omp simd`, which clang 14 cannot honour and warns about).
  const float* x = logits.data();
  const size_t n = logits.size();
  int32_t max_key = std::numeric_limits<int32_t>::min();
  int any_nan = 0;  // an int: GCC does not vectorize a bool | reduction
  for (size_t i = 0; i < n; ++i) {
    const int32_t key = float_order_key(x[i]);
    max_key = key > max_key ? key : max_key;
    any_nan |= static_cast<int>(x[i] != x[i]);
  }
  if (any_nan) {
    for (size_t i = 0; i < n; ++i) {
      if (std::isnan(x[i])) return Status(CorruptData("decoding: logit " + std::to_string(i) + " is NaN"));
    }
  }
  const float max_value = float_from_order_key(max_key);
  for (size_t i = 0; i < n; ++i) {
    if (x[i] == max_value) return static_cast<int32_t>(i);
  }
  return Status(Internal("decoding: no logit equals the maximum"));  // unreachable without NaN
}

}  // namespace tessera
