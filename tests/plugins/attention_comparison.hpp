// attention_comparison.hpp: an attention kernel against the reference kernel
// on one random problem (tests only; shared by the flash and paged tests).
//
// KV lies in shuffled blocks (kv_test_pool.hpp; slots that are not live tokens
// hold NaN, so reading one fails the comparison). Each sequence's query rows
// follow one spare row no sequence owns, which the kernel must leave untouched.
// Tolerance per element: |kernel - reference| <= abs_tol + rel_tol * |reference|.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kv_test_pool.hpp"
#include "reference_attention.hpp"
#include "tessera/attention.hpp"

namespace tessera::test {

struct AttentionSeqShape {
  int32_t n_past;
  int32_t n_query;
};

struct AttentionCase {
  std::string name;
  std::vector<AttentionSeqShape> seqs;
  int32_t n_kv_head = 2;
  int32_t group = 1;  // query heads per KV head
  int32_t head_dim = 64;
  float q_scale = 1.0f;  // multiplies the random queries: large values stress the online softmax
};

// kv_dtype f16: the pool holds the random values rounded to f16 and both
// kernels read that same pool, so the tolerance is unchanged.
inline void expect_matches_reference(AttentionKernel& kernel, const AttentionCase& c, int32_t block_size,
                                     uint32_t seed, double abs_tol = 2e-5, double rel_tol = 1e-4,
                                     DType kv_dtype = DType::f32) {
  constexpr float kUntouched = 12345.0f;  // rows no sequence owns must keep this
  std::mt19937 rng(seed);
  const int32_t n_head = c.n_kv_head * c.group;

  std::vector<int32_t> lengths;
  for (const AttentionSeqShape& s : c.seqs) lengths.push_back(s.n_past + s.n_query);
  KvTestPool pool = make_shuffled_pool(lengths, block_size, c.n_kv_head, c.head_dim, rng);
  if (kv_dtype == DType::f16) pool.to_f16();

  std::vector<AttentionSeq> seqs;
  int32_t n_rows = 0;
  for (size_t i = 0; i < c.seqs.size(); ++i) {
    n_rows += 1;  // the spare row
    seqs.push_back({pool.tables[i], c.seqs[i].n_past, c.seqs[i].n_query, n_rows});
    n_rows += c.seqs[i].n_query;
  }
  const size_t row_floats = static_cast<size_t>(n_head) * c.head_dim;
  std::vector<float> q(static_cast<size_t>(n_rows) * row_floats);  // [n_rows, n_head, head_dim]
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  for (float& x : q) x = value(rng) * c.q_scale;
  std::vector<float> out_ref(q.size(), kUntouched), out(q.size(), kUntouched);

  AttentionArgs a;
  a.q = q.data();
  a.n_head = n_head;
  a.n_kv_head = c.n_kv_head;
  a.head_dim = c.head_dim;
  a.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  a.kv = pool.view();
  a.seqs = seqs;

  plugins::ReferenceAttention reference({});
  a.out = out_ref.data();
  ASSERT_TRUE(reference.forward(a).ok());
  a.out = out.data();
  const Status st = kernel.forward(a);
  ASSERT_TRUE(st.ok()) << st.message();

  double worst = 0.0;
  size_t bad = 0;
  for (size_t i = 0; i < q.size(); ++i) {
    const double ref = out_ref[i];
    const double err = std::abs(static_cast<double>(out[i]) - ref);
    if (!(err <= abs_tol + rel_tol * std::abs(ref))) {  // also catches NaN
      if (bad++ < 5) ADD_FAILURE() << "element " << i << ": kernel " << out[i] << " vs reference " << ref;
    }
    if (ref != kUntouched) worst = std::max(worst, err);
  }
  EXPECT_EQ(bad, 0u) << "worst error " << worst;
}

}  // namespace tessera::test
