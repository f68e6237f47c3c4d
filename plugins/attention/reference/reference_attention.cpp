#include "reference_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "attention_checks.hpp"

namespace tessera::plugins {

Status ReferenceAttention::forward(const AttentionArgs& a) noexcept {
  return guard([&]() -> Status {
    TESSERA_RETURN_IF_ERROR(check_attention_args(a, "reference"));
    const int32_t group = a.n_head / a.n_kv_head;  // query heads sharing one KV head
    const int64_t D = a.head_dim;
    std::vector<double> scores;  // [n_past + i + 1] of one (query row, head)
    std::vector<double> acc(static_cast<size_t>(D));  // [head_dim]
    std::vector<float> kv_row(static_cast<size_t>(D));  // [head_dim] one K or V row as f32

    for (const AttentionSeq& seq : a.seqs) {
      for (int32_t i = 0; i < seq.n_query; ++i) {
        const int64_t row = static_cast<int64_t>(seq.q_row) + i;
        const int64_t n_keys = static_cast<int64_t>(seq.n_past) + i + 1;  // causal: up to its own position
        scores.resize(static_cast<size_t>(n_keys));
        for (int32_t h = 0; h < a.n_head; ++h) {
          const int32_t kv_head = h / group;
          const float* q = a.q + (row * a.n_head + h) * D;  // [head_dim]

          double max_score = -std::numeric_limits<double>::infinity();
          for (int64_t p = 0; p < n_keys; ++p) {
            kv_load(a.kv, a.kv.k, a.kv.slot_offset(seq.block_table, p) + kv_head * D, kv_row.data(), D);
            const float* k = kv_row.data();
            double dot = 0.0;
            for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(q[d]) * k[d];
            scores[static_cast<size_t>(p)] = dot * a.scale;
            max_score = std::max(max_score, scores[static_cast<size_t>(p)]);
          }

          double sum = 0.0;
          for (double& s : scores) {
            s = std::exp(s - max_score);
            sum += s;
          }

          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t p = 0; p < n_keys; ++p) {
            kv_load(a.kv, a.kv.v, a.kv.slot_offset(seq.block_table, p) + kv_head * D, kv_row.data(), D);
            const float* v = kv_row.data();
            const double w = scores[static_cast<size_t>(p)] / sum;
            for (int64_t d = 0; d < D; ++d) acc[static_cast<size_t>(d)] += w * v[d];
          }
          float* out = a.out + (row * a.n_head + h) * D;  // [head_dim]
          for (int64_t d = 0; d < D; ++d) out[d] = static_cast<float>(acc[static_cast<size_t>(d)]);
        }
      }
    }
    return Status::Ok();
  });
}

}  // namespace tessera::plugins
