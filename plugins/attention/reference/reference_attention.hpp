// Reference attention: the plain, obviously correct kernel the fast ones are tested against.
//
// For each sequence, query row and head: the scores against every position the
// query may see (causal: positions [0, n_past + i]), a max-subtracted softmax
// and the weighted sum of V, all accumulated in double. One thread, no tiling.
#pragma once

#include "tessera/attention.hpp"
#include "tessera/params.hpp"

namespace tessera::plugins {

class ReferenceAttention final : public AttentionKernel {
 public:
  explicit ReferenceAttention(const ParamValues& /*params: none*/) {}
  Status forward(const AttentionArgs& args) noexcept override;
};

}  // namespace tessera::plugins
