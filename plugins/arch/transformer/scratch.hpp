// scratch.hpp: activation buffers of one forward, sized for the largest batch
// seen so far and kept, so that steady decoding never allocates.
#pragma once

#include <cstdint>

#include "model_config.hpp"
#include "tessera/tensor.hpp"

namespace tessera::transformer {

class Scratch {
 public:
  // Make room for n_rows tokens; reallocates only when n_rows grows past capacity.
  void ensure(const ModelConfig& c, int64_t n_rows) {
    if (n_rows <= capacity_) return;
    const auto floats = [n_rows](int64_t width) {
      return HostBuffer(static_cast<size_t>(n_rows * width) * sizeof(float));
    };
    residual = floats(c.n_embd);
    normed = floats(c.n_embd);
    q = floats(c.q_dim());
    k = floats(c.kv_dim());
    v = floats(c.kv_dim());
    attn_out = floats(c.q_dim());
    gate = floats(c.n_ff);
    up = floats(c.n_ff);
    capacity_ = n_rows;
  }

  // Rows are tokens in batch order. In the last layer the residual stream is
  // narrowed to the logit rows, so the roles of `residual` and `normed` swap then.
  HostBuffer residual;  // [n_rows, n_embd] the residual stream x
  HostBuffer normed;    // [n_rows, n_embd] RMSNorm output, then sublayer output before the add
  HostBuffer q;         // [n_rows, n_head, head_dim]
  HostBuffer k;         // [n_rows, n_kv_head, head_dim]
  HostBuffer v;         // [n_rows, n_kv_head, head_dim]
  HostBuffer attn_out;  // [n_rows, n_head, head_dim]
  HostBuffer gate;      // [n_rows, n_ff] gate projection, then silu(gate) * up
  HostBuffer up;        // [n_rows, n_ff]

 private:
  int64_t capacity_ = 0;
};

}  // namespace tessera::transformer
