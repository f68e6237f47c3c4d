// PagedAttention on the CPU: attention that walks each sequence's block table
// block by block, for prefill, chunked prefill and decode, with GQA.
//
// Work is split into tasks (sequence, KV head, run of query rows, range of
// keys). A task loads every query head of its GQA group for its rows, then
// visits its key range in table order, one run of consecutive rows of a block
// at a time: those K/V rows are contiguous in the pool, so they are read in
// place (no gather), once for all query vectors of the task. Softmax is
// online (running max m, sum l, rescaled accumulator), in f32.
//
// Split-K: when there are fewer (sequence, KV head, rows) items than threads
// can share evenly (decode of a long context, few KV heads), each item's key
// range is cut into parts computed by different threads; every part leaves
// its partial (m, l, acc) and a merge step combines them:
//   M = max m_i,  L = sum l_i e^(m_i - M),  out = sum acc_i e^(m_i - M) / L.
#pragma once

#include <vector>

#include <cstdint>

#include "tessera/attention.hpp"
#include "tessera/params.hpp"

namespace tessera::plugins {

class PagedAttention final : public AttentionKernel {
 public:
  // Parameters: query_rows (query rows per task), splits (key-range parts per
  // item; 0 = chosen from the work and the thread count).
  explicit PagedAttention(const ParamValues& params);
  Status forward(const AttentionArgs& args) noexcept override;

  int32_t query_rows() const { return query_rows_; }
  int32_t splits() const { return splits_; }

 private:
  int32_t query_rows_ = 16;
  int32_t splits_ = 0;
  // The threads the automatic split-K plans for: the thread count when the
  // kernel was made (the pipeline's), not each call's. The engine runs a step
  // on fewer threads while the cores are busy; planning the same parts
  // whatever the load keeps the arithmetic, and so the output, the same.
  int parallelism_ = 1;
  // Per-thread task scratch and split-K partial states, grown on demand and
  // reused by every call (one call at a time, as attention.hpp allows).
  std::vector<float> scratch_;
  std::vector<float> partials_;
};

}  // namespace tessera::plugins
