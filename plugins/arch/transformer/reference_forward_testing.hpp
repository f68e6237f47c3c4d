// reference_forward_testing.hpp: an independent, naive Llama forward in the style of
// llama2.c's run.c: one sequence, one token at a time, its own KV arrays, its
// own RoPE written from the formulas. The plugin is tested against it.
#pragma once

#include <vector>

#include "fake_model_testing.hpp"

namespace tessera::transformer::testing {

class ReferenceTransformer {
 public:
  explicit ReferenceTransformer(const FakeWeightStore& weights);
  // Runs `token` at the next position; returns its logits [vocab].
  std::vector<float> step(int32_t token);
  // Runs every token; returns the logits of each [n_tokens][vocab].
  std::vector<std::vector<float>> run(const std::vector<int32_t>& tokens);

 private:
  void rope(std::vector<float>& vec, int64_t n_heads) const;  // at pos_

  const FakeWeightStore& w_;
  TinySpec spec_;
  int64_t head_dim_ = 0;
  int64_t pos_ = 0;
  std::vector<std::vector<float>> key_cache_;    // [n_layer][pos * kv_dim]
  std::vector<std::vector<float>> value_cache_;  // [n_layer][pos * kv_dim]
};

}  // namespace tessera::transformer::testing
