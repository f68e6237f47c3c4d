// tessera/blocks/shared_input.hpp: several Linears that read the same activations (Q/K/V,
// gate/up) in one parallel region.
//
// Each Linear's forward() forks the thread team, quantizes its input, waits at
// a barrier and joins: in a decode step of a 135M model those syncs are a
// visible share of the time. When every Linear of the group offers the
// prepare/compute split (tessera/linear.hpp), one region does it all: the
// Linears prepare in parallel (one each), then the threads split the
// concatenated output columns between them. Otherwise, or for prefill-sized
// batches (where one Linear's parallel quantization pays off), one forward each.
#pragma once

#include <cstdint>
#include <span>

#include "tessera/linear.hpp"
#include "tessera/status.hpp"

namespace tessera::blocks {

struct LinearOutput {
  Linear* linear;
  float* y;  // [n_rows, linear->out_features()]
};

// Batches of at most this many rows take the shared region.
inline constexpr int64_t kSharedInputMaxRows = 64;

// For each (linear, y): y = linear(x). x: [n_rows, in_features], the same for all.
Status forward_shared_input(std::span<const LinearOutput> group, const float* x, int64_t n_rows);

}  // namespace tessera::blocks
