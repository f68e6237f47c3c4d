#include "flash_attention.hpp"

#include <omp.h>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_checks.hpp"
#include "flash_tile_ops.hpp"

namespace tessera::plugins {
namespace {

// One unit of parallel work: query rows [row_begin, row_end) of one sequence,
// all query heads that share KV head `kv_head`.
struct WorkItem {
  int32_t seq;
  int32_t kv_head;
  int32_t row_begin;  // query index within the sequence (position n_past + row)
  int32_t row_end;
};

// Per-thread scratch, carved from one allocation made before the parallel region
// (nothing may throw inside it).
struct FlashScratch {
  float* q;    // [n_vec, head_dim]  queries of the item, pre-scaled
  float* acc;  // [n_vec, head_dim]  unnormalized outputs
  float* m;    // [n_vec]            running max
  float* l;    // [n_vec]            running sum
  float* s;    // [tile]             scores, then probabilities, of one query
  float* kt;   // [head_dim, tile]   K tile, transposed
  float* v;    // [tile, head_dim]   V tile
};

size_t scratch_floats(int64_t n_vec, int64_t head_dim, int64_t tile) {
  return static_cast<size_t>(2 * n_vec * head_dim + 2 * n_vec + tile + 2 * head_dim * tile);
}

FlashScratch carve_flash_scratch(float* base, int64_t n_vec, int64_t head_dim, int64_t tile) {
  FlashScratch s;
  s.q = base;
  s.acc = s.q + n_vec * head_dim;
  s.m = s.acc + n_vec * head_dim;
  s.l = s.m + n_vec;
  s.s = s.l + n_vec;
  s.kt = s.s + tile;
  s.v = s.kt + head_dim * tile;
  return s;
}

void run_item(const AttentionArgs& a, const WorkItem& item, int32_t tile, const FlashScratch& w) {
  const AttentionSeq& seq = a.seqs[static_cast<size_t>(item.seq)];
  const int32_t group = a.n_head / a.n_kv_head;
  const int64_t D = a.head_dim;
  const int32_t n_rows = item.row_end - item.row_begin;
  const int32_t n_vec = n_rows * group;  // query vectors: vector r * group + g is row r, head kv_head * group + g

  for (int32_t r = 0; r < n_rows; ++r) {
    const int64_t q_row = static_cast<int64_t>(seq.q_row) + item.row_begin + r;
    for (int32_t g = 0; g < group; ++g) {
      const float* q = a.q + (q_row * a.n_head + item.kv_head * group + g) * D;  // [head_dim]
      float* dst = w.q + (static_cast<int64_t>(r) * group + g) * D;
      for (int64_t d = 0; d < D; ++d) dst[d] = q[d] * a.scale;
    }
  }
  std::fill(w.acc, w.acc + n_vec * D, 0.0f);
  std::fill(w.m, w.m + n_vec, -std::numeric_limits<float>::infinity());
  std::fill(w.l, w.l + n_vec, 0.0f);

  // Keys [0, n_past + row_end): the last row of the item sees all of them.
  const int64_t n_keys = static_cast<int64_t>(seq.n_past) + item.row_end;
  for (int64_t first = 0; first < n_keys; first += tile) {
    const int32_t n = static_cast<int32_t>(std::min<int64_t>(tile, n_keys - first));
    flash::gather_tile(a.kv, seq.block_table, item.kv_head, first, n, tile, w.kt, w.v);
    for (int32_t r = 0; r < n_rows; ++r) {
      // Causal: row r sits at position n_past + row_begin + r and sees keys up to it.
      const int64_t visible = static_cast<int64_t>(seq.n_past) + item.row_begin + r + 1 - first;
      if (visible <= 0) continue;
      const int32_t n_visible = static_cast<int32_t>(std::min<int64_t>(n, visible));
      for (int32_t g = 0; g < group; ++g) {
        const int64_t vec = static_cast<int64_t>(r) * group + g;
        flash::tile_scores(w.q + vec * D, w.kt, a.head_dim, tile, n_visible, w.s);
        flash::online_softmax_update(w.s, n_visible, w.v, a.head_dim, w.m + vec, w.l + vec, w.acc + vec * D);
      }
    }
  }

  for (int32_t r = 0; r < n_rows; ++r) {
    const int64_t q_row = static_cast<int64_t>(seq.q_row) + item.row_begin + r;
    for (int32_t g = 0; g < group; ++g) {
      const int64_t vec = static_cast<int64_t>(r) * group + g;
      float* out = a.out + (q_row * a.n_head + item.kv_head * group + g) * D;  // [head_dim]
      const float inv = 1.0f / w.l[vec];  // l >= 1: each query sees at least its own key
      for (int64_t d = 0; d < D; ++d) out[d] = w.acc[vec * D + d] * inv;
    }
  }
}

}  // namespace

FlashAttention::FlashAttention(const ParamValues& params)
    : tile_(static_cast<int32_t>(params.get_int("tile"))),
      query_rows_(static_cast<int32_t>(params.get_int("query_rows"))) {
  if (params.get_int("tile") < 1 || params.get_int("tile") > 4096) {
    throw std::invalid_argument("attention flash: tile must be in [1, 4096], got " +
                                std::to_string(params.get_int("tile")));
  }
  if (params.get_int("query_rows") < 1 || params.get_int("query_rows") > 4096) {
    throw std::invalid_argument("attention flash: query_rows must be in [1, 4096], got " +
                                std::to_string(params.get_int("query_rows")));
  }
}

Status FlashAttention::forward(const AttentionArgs& a) noexcept {
  return guard([&]() -> Status {
    TESSERA_RETURN_IF_ERROR(check_attention_args(a, "flash"));
    const int32_t group = a.n_head / a.n_kv_head;

    std::vector<WorkItem> items;
    double multiply_adds = 0.0;  // scores and weighted sums of the whole call, to size the team
    for (size_t s = 0; s < a.seqs.size(); ++s) {
      const AttentionSeq& seq = a.seqs[s];
      for (int32_t begin = 0; begin < seq.n_query; begin += query_rows_) {
        const int32_t end = std::min(seq.n_query, begin + query_rows_);
        for (int32_t h = 0; h < a.n_kv_head; ++h) items.push_back({static_cast<int32_t>(s), h, begin, end});
        multiply_adds += 2.0 * a.n_head * a.head_dim * (end - begin) * (static_cast<double>(seq.n_past) + end);
      }
    }
    if (items.empty()) return Status::Ok();

    const int64_t max_vec = static_cast<int64_t>(query_rows_) * group;
    const size_t per_thread = scratch_floats(max_vec, a.head_dim, tile_);
    // Waking a thread team costs microseconds; below ~1M multiply-adds (a short
    // decode) one thread finishes sooner than the team would start.
    constexpr double kParallelThreshold = 1 << 20;
    const int n_threads = multiply_adds < kParallelThreshold
                              ? 1
                              : std::max(1, std::min<int>(omp_get_max_threads(), static_cast<int>(items.size())));
    std::vector<float> scratch(per_thread * static_cast<size_t>(n_threads));
    const int64_t n_items = static_cast<int64_t>(items.size());

#pragma omp parallel num_threads(n_threads) if (n_threads > 1)
    {
      const FlashScratch w = carve_flash_scratch(scratch.data() + per_thread * static_cast<size_t>(omp_get_thread_num()), max_vec,
                              a.head_dim, tile_);
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < n_items; ++i) run_item(a, items[static_cast<size_t>(i)], tile_, w);
    }
    return Status::Ok();
  });
}

}  // namespace tessera::plugins
