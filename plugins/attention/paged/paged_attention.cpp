#include "paged_attention.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "attention_checks.hpp"
#include "paged_block_ops.hpp"

namespace tessera::plugins {
namespace {

using paged_attention::accumulate_group;
using paged_attention::group_scores;
using paged_attention::softmax_update;
using paged_attention::ValueRun;

// Keys scored before one online-softmax step: bounds the score scratch however
// large a block is (a contiguous cache's block is the whole context). A chunk
// crosses block boundaries, so a decode over a short context takes one step.
constexpr int32_t kMaxRun = 256;
// Heads of a GQA group whose values are accumulated by one call (a larger
// group takes several): bounds the array of their softmax corrections.
constexpr int32_t kFusedHeads = 8;
// Floats of widened K (and as many of V) an f16 chunk may take per thread:
// 128 KiB each, so a chunk of every KV head stays in L2.
constexpr int64_t kWidenFloats = 32768;
// Split-K never makes parts shorter than this: below it the merge and the
// extra task cost more than the parallelism gains.
constexpr int64_t kMinSplitKeys = 512;
// Shorter parts still pay when they only even out the threads: SmolLM2's 3 KV
// heads on 2 threads leave one thread idle a third of the time unless each
// head is cut in two. Measured (BM_PagedDecodeShort against NoSplit): the
// merge and second barrier cost ~1 us, a loss at 64 keys, even at 128, and
// 10% / 17% faster at 256 / 512; in the model, cutting from 48 keys made the
// decode's attention 40% slower.
constexpr int64_t kMinBalanceKeys = 96;
// Waking a thread team costs about a microsecond; below 64K multiply-adds
// (SmolLM2's 9 heads of 64: a decode over fewer than 57 keys) one thread
// finishes sooner than the team would start.
constexpr double kParallelThreshold = 1 << 16;

// Query rows [row_begin, row_end) of one sequence, every query head of KV heads
// [kv_head, kv_head_end), against keys [key_begin, key_end). A task with
// several KV heads walks each block once for all of them, so the block's rows
// (contiguous in the pool) are read in one sweep.
struct Task {
  int32_t seq;
  int32_t kv_head;
  int32_t kv_head_end;
  int32_t row_begin;  // query index within the sequence (position n_past + row)
  int32_t row_end;
  int64_t key_begin;
  int64_t key_end;
  int64_t partial;  // -1: the task covers every key and writes `out`; else offset of its state in the partials (one KV head)
};

// The parts of one split item, to be combined into `out`.
struct Merge {
  int32_t seq;
  int32_t kv_head;
  int32_t row_begin;
  int32_t row_end;
  int64_t first_partial;  // parts are consecutive, each partial_floats() long
  int32_t parts;
};

// A partial state per query vector: acc [head_dim], then m, then l.
int64_t partial_floats(int32_t n_vec, int32_t head_dim) { return static_cast<int64_t>(n_vec) * (head_dim + 2); }

// Per-thread scratch, carved from one allocation made before the parallel
// region (nothing may throw inside it).
struct PagedScratch {
  // Vector (h, r, g): KV head kv_head + h, row r, head g of its group, at
  // index (h * n_rows + r) * group + g.
  float* q;    // [n_vec, head_dim]  queries of the task, pre-scaled
  float* acc;  // [n_vec, head_dim]  unnormalized outputs
  float* m;    // [n_vec]            running max
  float* l;    // [n_vec]            running sum
  float* s;    // [group, kMaxRun]   scores, then weights, of one row's group
  float* k;    // [widen_floats(head_dim)] an f16 chunk's K rows, widened (f16 pools only)
  float* v;    // [widen_floats(head_dim)] its V rows
};

// Room for a chunk of kMaxRun keys of one head, or kWidenFloats, whichever is more.
int64_t widen_floats(int64_t head_dim) { return std::max<int64_t>(kMaxRun * head_dim, kWidenFloats); }

size_t scratch_floats(int64_t n_vec, int64_t head_dim, int64_t group, bool widen) {
  return static_cast<size_t>(2 * n_vec * head_dim + 2 * n_vec + group * kMaxRun +
                             (widen ? 2 * widen_floats(head_dim) : 0));
}

PagedScratch carve_paged_scratch(float* base, int64_t n_vec, int64_t head_dim, int64_t group, bool widen) {
  PagedScratch w;
  w.q = base;
  w.acc = w.q + n_vec * head_dim;
  w.m = w.acc + n_vec * head_dim;
  w.l = w.m + n_vec;
  w.s = w.l + n_vec;
  w.k = widen ? w.s + group * kMaxRun : nullptr;
  w.v = widen ? w.k + widen_floats(head_dim) : nullptr;
  return w;
}

// Asks for [first, first + bytes) into L2 without waiting for it.
void prefetch_bytes(const char* first, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(first + off, 0, 2);
  __builtin_prefetch(first + bytes - 1, 0, 2);  // a slice need not start on a line
}

// Index of query vector (KV head h of the task, row r, head g of its group)
// in the scratch (PagedScratch::q, acc, m, l).
int64_t vector_index(int32_t h, int32_t r, int32_t g, int32_t n_rows, int32_t group) {
  return (static_cast<int64_t>(h) * n_rows + r) * group + g;
}

// One KV head's rows of a chunk, as consecutive runs: f32, or f16 read in
// place by the f16 loops.
template <typename KvT>
struct HeadRunOf {
  const KvT* k;  // row t at k + t * run_stride
  const KvT* v;
  int32_t n;
};

void score_run(const float* q, int32_t n_q, const float* k, int64_t stride, int32_t head_dim, int32_t n, float* s,
               int32_t ld_s) {
  group_scores(q, n_q, k, stride, head_dim, n, s, ld_s);
}
void score_run(const float* q, int32_t n_q, const uint16_t* k, int64_t stride, int32_t head_dim, int32_t n, float* s,
               int32_t ld_s) {
  paged_attention::group_scores_f16(q, n_q, k, stride, head_dim, n, s, ld_s);
}
void accumulate_runs(const float* p, int64_t ld_p, int32_t n_rows, const float* correction, const ValueRun* runs,
                     int32_t n_runs, int64_t stride, int32_t head_dim, float* acc) {
  accumulate_group(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}
void accumulate_runs(const float* p, int64_t ld_p, int32_t n_rows, const float* correction,
                     const paged_attention::ValueRunF16* runs, int32_t n_runs, int64_t stride, int32_t head_dim,
                     float* acc) {
  paged_attention::accumulate_group_f16(p, ld_p, n_rows, correction, runs, n_runs, stride, head_dim, acc);
}

// Every query row of one KV head (task-local index h) against the keys
// [first, chunk_end) held by `runs`: scores, the online-softmax step of each
// head of the group, and one accumulation of V for the group.
template <typename KvT>
void attend_chunk(const AttentionArgs& a, const Task& task, const PagedScratch& w, int32_t h, int64_t first,
                  int64_t chunk_end, const HeadRunOf<KvT>* runs, int64_t run_stride) {
  const AttentionSeq& seq = a.seqs[static_cast<size_t>(task.seq)];
  const int32_t group = a.n_head / a.n_kv_head;
  const int32_t D = a.head_dim;
  const int32_t n_rows = task.row_end - task.row_begin;
  paged_attention::ValueRunOf<KvT> value_runs[kMaxRun];
  for (int32_t r = 0; r < n_rows; ++r) {
    // Causal: row r sits at position n_past + row_begin + r and sees keys up to it.
    const int64_t position = static_cast<int64_t>(seq.n_past) + task.row_begin + r;
    const int64_t visible = std::min(chunk_end, position + 1) - first;
    if (visible <= 0) continue;
    const auto n = static_cast<int32_t>(visible);
    const int64_t vec0 = vector_index(h, r, 0, n_rows, group);
    int32_t n_value_runs = 0;
    for (int32_t done = 0, i = 0; done < n; ++i) {
      const int32_t take = std::min(runs[i].n, n - done);
      score_run(w.q + vec0 * D, group, runs[i].k, run_stride, D, take, w.s + done, kMaxRun);
      value_runs[n_value_runs++] = {runs[i].v, take};
      done += take;
    }
    // The softmax step of every head of the group, then one accumulation
    // for all of them, which can load each V row once for the group.
    for (int32_t g0 = 0; g0 < group; g0 += kFusedHeads) {
      const int32_t n_heads_fused = std::min(kFusedHeads, group - g0);
      float corrections[kFusedHeads];  // [n_heads_fused]
      for (int32_t g = 0; g < n_heads_fused; ++g) {
        const int64_t vec = vec0 + g0 + g;
        corrections[g] = softmax_update(w.s + static_cast<int64_t>(g0 + g) * kMaxRun, n, w.m + vec, w.l + vec);
      }
      accumulate_runs(w.s + static_cast<int64_t>(g0) * kMaxRun, kMaxRun, n_heads_fused, corrections, value_runs,
                      n_value_runs, run_stride, D, w.acc + (vec0 + g0) * D);
    }
  }
}

void run_task(const AttentionArgs& a, const Task& task, const PagedScratch& w, float* partials) {
  const AttentionSeq& seq = a.seqs[static_cast<size_t>(task.seq)];
  const int32_t group = a.n_head / a.n_kv_head;
  const int32_t D = a.head_dim;
  const int32_t B = a.kv.block_size;
  const int64_t stride = a.kv.row_stride();
  const int32_t n_rows = task.row_end - task.row_begin;
  const int32_t n_heads = task.kv_head_end - task.kv_head;
  const int32_t n_vec = n_heads * n_rows * group;
  auto vec_index = [&](int32_t h, int32_t r, int32_t g) { return vector_index(h, r, g, n_rows, group); };
  auto head_of = [&](int32_t h, int32_t g) { return static_cast<int64_t>(task.kv_head + h) * group + g; };

  for (int32_t h = 0; h < n_heads; ++h) {
    for (int32_t r = 0; r < n_rows; ++r) {
      const int64_t q_row = static_cast<int64_t>(seq.q_row) + task.row_begin + r;
      for (int32_t g = 0; g < group; ++g) {
        const float* q = a.q + (q_row * a.n_head + head_of(h, g)) * D;  // [head_dim]
        float* dst = w.q + vec_index(h, r, g) * D;
        for (int32_t d = 0; d < D; ++d) dst[d] = q[d] * a.scale;
      }
    }
  }
  std::fill(w.acc, w.acc + static_cast<int64_t>(n_vec) * D, 0.0f);
  std::fill(w.m, w.m + n_vec, -std::numeric_limits<float>::infinity());
  std::fill(w.l, w.l + n_vec, 0.0f);

  // Chunks of up to kMaxRun keys in table order, each cut into runs of
  // consecutive rows of one block. f32 pools are read in place, and so are
  // f16 ones where the f16 loops exist (has_f16_loops). Otherwise an f16
  // chunk is widened into the scratch first: whole rows (every KV head, one
  // sequential sweep per run) when the task has every head, which bounds the
  // chunk to kWidenFloats / row length keys; one head's slice otherwise.
  struct KeyRun {
    int64_t offset;  // of the run's first row (KV head 0) in the pool, in elements
    int32_t n;
  };
  const bool f16 = a.kv.dtype == DType::f16;
  const bool in_place_f16 = f16 && paged_attention::has_f16_loops(D);
  const bool widen = f16 && !in_place_f16;
  const bool widen_rows = widen && n_heads == a.n_kv_head;
  const int64_t chunk_keys =
      widen_rows ? std::clamp<int64_t>(widen_floats(D) / stride, 1, kMaxRun) : static_cast<int64_t>(kMaxRun);
  KeyRun key_runs[kMaxRun];
  HeadRunOf<float> head_runs[kMaxRun];
  HeadRunOf<uint16_t> head_runs_f16[kMaxRun];
  for (int64_t first = task.key_begin; first < task.key_end;) {
    const int64_t chunk_end = std::min(task.key_end, first + chunk_keys);
    int32_t n_runs = 0;
    for (int64_t key = first; key < chunk_end;) {
      const int64_t block_start = key / B * B;
      const int64_t run_end = std::min(block_start + B, chunk_end);
      const int64_t physical = seq.block_table[static_cast<size_t>(key / B)];
      key_runs[n_runs++] = {(physical * B + (key - block_start)) * stride, static_cast<int32_t>(run_end - key)};
      key = run_end;
    }
    if (!widen) {
      // The task reads its heads' slice of each row, head by head: ask for
      // all of the chunk's slices up front so that the misses overlap.
      const size_t elem = in_place_f16 ? sizeof(uint16_t) : sizeof(float);
      const auto* k_pool = static_cast<const char*>(a.kv.k) + static_cast<int64_t>(task.kv_head) * D * elem;
      const auto* v_pool = static_cast<const char*>(a.kv.v) + static_cast<int64_t>(task.kv_head) * D * elem;
      const size_t slice_bytes = static_cast<size_t>(n_heads) * D * elem;
      for (int32_t i = 0; i < n_runs; ++i) {
        for (int32_t t = 0; t < key_runs[i].n; ++t) {
          const auto row_bytes = static_cast<size_t>(key_runs[i].offset + t * stride) * elem;
          prefetch_bytes(k_pool + row_bytes, slice_bytes);
          prefetch_bytes(v_pool + row_bytes, slice_bytes);
        }
      }
    }
    if (widen_rows) {
      int64_t row = 0;  // a run's rows are contiguous in the pool: one conversion each for K and V
      for (int32_t i = 0; i < n_runs; ++i) {
        f16_to_f32_n(a.kv.k_f16() + key_runs[i].offset, w.k + row * stride, key_runs[i].n * stride);
        f16_to_f32_n(a.kv.v_f16() + key_runs[i].offset, w.v + row * stride, key_runs[i].n * stride);
        row += key_runs[i].n;
      }
    }
    for (int32_t h = 0; h < n_heads; ++h) {
      const int64_t head_offset = static_cast<int64_t>(task.kv_head + h) * D;
      int32_t n_head_runs = 0;
      if (in_place_f16) {
        for (int32_t i = 0; i < n_runs; ++i) {
          const int64_t offset = key_runs[i].offset + head_offset;
          head_runs_f16[n_head_runs++] = {a.kv.k_f16() + offset, a.kv.v_f16() + offset, key_runs[i].n};
        }
        attend_chunk(a, task, w, h, first, chunk_end, head_runs_f16, stride);
        continue;
      }
      int64_t run_stride = stride;
      if (widen_rows) {
        const auto n_chunk = static_cast<int32_t>(chunk_end - first);
        head_runs[n_head_runs++] = {w.k + head_offset, w.v + head_offset, n_chunk};
      } else if (widen) {
        int64_t row = 0;
        for (int32_t i = 0; i < n_runs; ++i) {
          for (int32_t t = 0; t < key_runs[i].n; ++t, ++row) {
            const int64_t offset = key_runs[i].offset + t * stride + head_offset;
            f16_to_f32_n(a.kv.k_f16() + offset, w.k + row * D, D);
            f16_to_f32_n(a.kv.v_f16() + offset, w.v + row * D, D);
          }
        }
        head_runs[n_head_runs++] = {w.k, w.v, static_cast<int32_t>(row)};
        run_stride = D;
      } else {
        for (int32_t i = 0; i < n_runs; ++i) {
          const int64_t offset = key_runs[i].offset + head_offset;
          head_runs[n_head_runs++] = {a.kv.k_f32() + offset, a.kv.v_f32() + offset, key_runs[i].n};
        }
      }
      attend_chunk(a, task, w, h, first, chunk_end, head_runs, run_stride);
    }
    first = chunk_end;
  }

  if (task.partial >= 0) {  // one KV head: vector index r * group + g, as run_merge reads it
    float* state = partials + task.partial;  // [n_vec, head_dim + 2]
    for (int32_t vec = 0; vec < n_vec; ++vec) {
      float* dst = state + static_cast<int64_t>(vec) * (D + 2);
      std::copy(w.acc + static_cast<int64_t>(vec) * D, w.acc + static_cast<int64_t>(vec + 1) * D, dst);
      dst[D] = w.m[vec];
      dst[D + 1] = w.l[vec];
    }
    return;
  }
  for (int32_t h = 0; h < n_heads; ++h) {
    for (int32_t r = 0; r < n_rows; ++r) {
      const int64_t q_row = static_cast<int64_t>(seq.q_row) + task.row_begin + r;
      for (int32_t g = 0; g < group; ++g) {
        const int64_t vec = vec_index(h, r, g);
        float* out = a.out + (q_row * a.n_head + head_of(h, g)) * D;  // [head_dim]
        const float inv = 1.0f / w.l[vec];  // l >= 1: each query sees at least its own key
        for (int32_t d = 0; d < D; ++d) out[d] = w.acc[vec * D + d] * inv;
      }
    }
  }
}

void run_merge(const AttentionArgs& a, const Merge& merge, const float* partials) {
  const AttentionSeq& seq = a.seqs[static_cast<size_t>(merge.seq)];
  const int32_t group = a.n_head / a.n_kv_head;
  const int32_t D = a.head_dim;
  const int32_t n_vec = (merge.row_end - merge.row_begin) * group;
  const int64_t part_floats = partial_floats(n_vec, D);
  for (int32_t vec = 0; vec < n_vec; ++vec) {
    auto state = [&](int32_t part) { return partials + merge.first_partial + part * part_floats + vec * (D + 2); };
    // Part 0 starts at key 0, which every query sees, so M is finite.
    float M = -std::numeric_limits<float>::infinity();
    for (int32_t p = 0; p < merge.parts; ++p) M = std::max(M, state(p)[D]);
    const int64_t q_row = static_cast<int64_t>(seq.q_row) + merge.row_begin + vec / group;
    float* out = a.out + (q_row * a.n_head + merge.kv_head * group + vec % group) * D;  // [head_dim]
    std::fill(out, out + D, 0.0f);
    float L = 0.0f;
    for (int32_t p = 0; p < merge.parts; ++p) {
      const float* st = state(p);
      if (st[D + 1] == 0.0f) continue;  // this part held no key the query sees
      const float weight = std::exp(st[D] - M);
      L += st[D + 1] * weight;
      for (int32_t d = 0; d < D; ++d) out[d] += st[d] * weight;
    }
    const float inv = 1.0f / L;
    for (int32_t d = 0; d < D; ++d) out[d] *= inv;
  }
}

// Cut [0, n_keys) into `parts` ranges, on block boundaries when blocks are
// small enough to leave every part at least one.
int64_t part_boundary(int64_t n_keys, int32_t parts, int32_t p, int32_t block_size) {
  const int64_t raw = n_keys * p / parts;
  if (p == parts || n_keys / parts < block_size) return raw;
  return raw / block_size * block_size;
}

}  // namespace

PagedAttention::PagedAttention(const ParamValues& params) {
  const int64_t query_rows = params.get_int("query_rows");
  const int64_t splits = params.get_int("splits");
  if (query_rows < 1 || query_rows > 4096) {
    throw std::invalid_argument("attention paged: query_rows must be in [1, 4096], got " + std::to_string(query_rows));
  }
  if (splits < 0 || splits > 256) {
    throw std::invalid_argument("attention paged: splits must be in [0, 256] (0 = automatic), got " +
                                std::to_string(splits));
  }
  query_rows_ = static_cast<int32_t>(query_rows);
  splits_ = static_cast<int32_t>(splits);
  parallelism_ = std::max(1, omp_get_max_threads());
}

Status PagedAttention::forward(const AttentionArgs& a) noexcept {
  return guard([&]() -> Status {
    TESSERA_RETURN_IF_ERROR(check_attention_args(a, "paged"));
    const int32_t group = a.n_head / a.n_kv_head;

    // Items (sequence, rows) and the total work, to size the team and the splits.
    struct Item {
      int32_t seq, row_begin, row_end;
      int64_t n_keys;
    };
    std::vector<Item> items;
    double multiply_adds = 0.0;
    for (size_t s = 0; s < a.seqs.size(); ++s) {
      const AttentionSeq& seq = a.seqs[s];
      for (int32_t begin = 0; begin < seq.n_query; begin += query_rows_) {
        const int32_t end = std::min(seq.n_query, begin + query_rows_);
        const int64_t n_keys = static_cast<int64_t>(seq.n_past) + end;  // the last row sees them all
        items.push_back({static_cast<int32_t>(s), begin, end, n_keys});
        multiply_adds += 2.0 * a.n_head * a.head_dim * (end - begin) * static_cast<double>(n_keys);
      }
    }
    if (items.empty()) return Status::Ok();

    const bool parallel = multiply_adds >= kParallelThreshold;
    const int n_threads = parallel ? parallelism_ : 1;
    // Automatic split-K: enough tasks for every thread to get about four, so
    // that uneven ones even out, as long as parts stay long enough to pay off.
    const int64_t base_tasks = static_cast<int64_t>(items.size()) * a.n_kv_head;
    const int64_t wanted_parts = n_threads == 1 ? 1 : (4 * n_threads + base_tasks - 1) / base_tasks;
    // Fewest parts that deal the tasks evenly (3 heads x 2 parts on 2 threads).
    const int64_t balanced_parts = n_threads / std::gcd(base_tasks, static_cast<int64_t>(n_threads));
    // With enough items to keep every thread busy, one task takes all KV heads
    // of its item (one sweep over each block); otherwise one head per task.
    const bool whole_items = static_cast<int64_t>(items.size()) >= 4 * n_threads;

    std::vector<Task> tasks;
    std::vector<Merge> merges;
    int64_t partial_total = 0;
    for (const Item& item : items) {
      int64_t parts = splits_ > 0 ? splits_ : std::min(wanted_parts, item.n_keys / kMinSplitKeys);
      if (splits_ == 0 && parts <= 1 && !whole_items && item.n_keys / balanced_parts >= kMinBalanceKeys)
        parts = balanced_parts;
      parts = std::clamp<int64_t>(parts, 1, item.n_keys);
      const int32_t n_vec = (item.row_end - item.row_begin) * group;
      if (parts == 1 && whole_items) {
        tasks.push_back({item.seq, 0, a.n_kv_head, item.row_begin, item.row_end, 0, item.n_keys, -1});
        continue;
      }
      for (int32_t h = 0; h < a.n_kv_head; ++h) {
        if (parts == 1) {
          tasks.push_back({item.seq, h, h + 1, item.row_begin, item.row_end, 0, item.n_keys, -1});
          continue;
        }
        merges.push_back({item.seq, h, item.row_begin, item.row_end, partial_total, static_cast<int32_t>(parts)});
        for (int32_t p = 0; p < parts; ++p) {
          const auto P = static_cast<int32_t>(parts);
          tasks.push_back({item.seq, h, h + 1, item.row_begin, item.row_end,
                           part_boundary(item.n_keys, P, p, a.kv.block_size),
                           part_boundary(item.n_keys, P, p + 1, a.kv.block_size), partial_total});
          partial_total += partial_floats(n_vec, a.head_dim);
        }
      }
    }

    const int64_t max_vec = static_cast<int64_t>(query_rows_) * group * (whole_items ? a.n_kv_head : 1);
    // Widening scratch only where f16 rows are widened in memory (no f16 loops for this head_dim).
    const bool widens = a.kv.dtype == DType::f16 && !paged_attention::has_f16_loops(a.head_dim);
    const size_t per_thread = scratch_floats(max_vec, a.head_dim, group, widens);
    const int available = parallel ? std::max(1, omp_get_max_threads()) : 1;
    const int team = std::max(1, std::min({n_threads, available, static_cast<int>(tasks.size())}));
    // Kept between calls and only ever grown: no allocation, and no zeroing of
    // the widening scratch, per layer of a steady decode.
    const size_t scratch_size = per_thread * static_cast<size_t>(team);
    if (scratch_.size() < scratch_size) scratch_.resize(scratch_size);
    if (partials_.size() < static_cast<size_t>(partial_total)) partials_.resize(static_cast<size_t>(partial_total));
    float* scratch = scratch_.data();
    float* partials = partials_.data();
    const auto n_tasks = static_cast<int64_t>(tasks.size());
    const auto n_merges = static_cast<int64_t>(merges.size());

#pragma omp parallel num_threads(team) if (team > 1)
    {
      const PagedScratch w = carve_paged_scratch(scratch + per_thread * static_cast<size_t>(omp_get_thread_num()), max_vec,
                              a.head_dim, group, widens);
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < n_tasks; ++i) run_task(a, tasks[static_cast<size_t>(i)], w, partials);
      // The implicit barrier above: every part is done before any merge reads it.
#pragma omp for schedule(dynamic, 1)
      for (int64_t i = 0; i < n_merges; ++i) run_merge(a, merges[static_cast<size_t>(i)], partials);
    }
    return Status::Ok();
  });
}

}  // namespace tessera::plugins
