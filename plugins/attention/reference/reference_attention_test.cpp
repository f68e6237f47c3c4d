// The reference kernel on cases small enough to compute by hand, and its
// argument checks. (Its agreement with the flash kernel is tested there.)
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "tessera/half.hpp"

#include "plugin_loading.hpp"
#include "plugin_test_support.hpp"
#include "reference_attention.hpp"

namespace tessera::plugins {
const PluginLibrary* reference_attention_entry();
}

namespace tessera::plugins {
namespace {

// A one-block pool [1, block, n_kv_head, head_dim] filled by the test.
struct TinyCache {
  TinyCache(int32_t block, int32_t n_kv_head, int32_t head_dim)
      : k(static_cast<size_t>(block) * n_kv_head * head_dim, 0.0f), v(k.size(), 0.0f) {
    view.block_size = block;
    view.n_kv_head = n_kv_head;
    view.head_dim = head_dim;
    view.k = k.data();
    view.v = v.data();
  }
  float& k_at(int pos, int head, int d) { return k[(static_cast<size_t>(pos) * view.n_kv_head + head) * view.head_dim + d]; }
  float& v_at(int pos, int head, int d) { return v[(static_cast<size_t>(pos) * view.n_kv_head + head) * view.head_dim + d]; }

  std::vector<float> k, v;
  std::vector<int32_t> table{0};
  KvLayerView view;
};

AttentionArgs args_for(TinyCache& cache, const float* q, float* out, int32_t n_head, const AttentionSeq& seq) {
  AttentionArgs a;
  a.q = q;
  a.out = out;
  a.n_head = n_head;
  a.n_kv_head = cache.view.n_kv_head;
  a.head_dim = cache.view.head_dim;
  a.scale = 1.0f;
  a.kv = cache.view;
  a.seqs = {&seq, 1};
  return a;
}

TEST(ReferenceAttention, EntryDescribesThePlugin) {
  const PluginInfo& info =
      test::expect_single_plugin(reference_attention_entry(), PluginFamily::attention, "reference");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

TEST(ReferenceAttention, SoftmaxWeightsFollowTheScores) {
  // head_dim 1, scores q*k = 0 and ln 3, so the weights are 1/4 and 3/4.
  TinyCache cache(2, 1, 1);
  cache.k_at(0, 0, 0) = 0.0f;
  cache.k_at(1, 0, 0) = static_cast<float>(std::log(3.0));
  cache.v_at(0, 0, 0) = 8.0f;
  cache.v_at(1, 0, 0) = 4.0f;
  const float q = 1.0f;
  float out = 0.0f;
  AttentionSeq seq{cache.table, 1, 1, 0};
  ReferenceAttention kernel({});
  ASSERT_TRUE(kernel.forward(args_for(cache, &q, &out, 1, seq)).ok());
  EXPECT_NEAR(out, 0.25 * 8.0 + 0.75 * 4.0, 1e-6);
}

TEST(ReferenceAttention, ReadsF16PoolsAsTheirWidenedValues) {
  // Values exact in f16: the f16 pool must give the f32 pool's output bit for bit.
  TinyCache cache(5, 2, 8);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  for (float* x : {cache.k.data(), cache.v.data()}) {
    for (size_t i = 0; i < cache.k.size(); ++i) x[i] = f16_to_f32(f32_to_f16(value(rng)));
  }
  std::vector<float> q(2 * 4 * 8);
  for (float& x : q) x = value(rng);
  std::vector<float> want(q.size()), got(q.size());
  AttentionSeq seq{cache.table, 3, 2, 0};
  ReferenceAttention kernel({});
  ASSERT_TRUE(kernel.forward(args_for(cache, q.data(), want.data(), 4, seq)).ok());

  std::vector<uint16_t> k16(cache.k.size()), v16(cache.v.size());
  for (size_t i = 0; i < k16.size(); ++i) {
    k16[i] = f32_to_f16(cache.k[i]);
    v16[i] = f32_to_f16(cache.v[i]);
  }
  AttentionArgs a = args_for(cache, q.data(), got.data(), 4, seq);
  a.kv.dtype = DType::f16;
  a.kv.k = k16.data();
  a.kv.v = v16.data();
  ASSERT_TRUE(kernel.forward(a).ok());
  EXPECT_EQ(got, want);

  a.kv.dtype = DType::bf16;
  const Status st = kernel.forward(a);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("bf16"), std::string::npos) << st.message();
}

TEST(ReferenceAttention, PrefillIsCausal) {
  // Three queries over three keys; zero queries give uniform weights over the
  // visible keys, so row i is the mean of V[0..i].
  TinyCache cache(3, 1, 2);
  for (int p = 0; p < 3; ++p) {
    cache.v_at(p, 0, 0) = static_cast<float>(p + 1);
    cache.v_at(p, 0, 1) = static_cast<float>(10 * (p + 1));
  }
  std::vector<float> q(3 * 2, 0.0f);
  std::vector<float> out(3 * 2, -1.0f);
  AttentionSeq seq{cache.table, 0, 3, 0};
  ReferenceAttention kernel({});
  ASSERT_TRUE(kernel.forward(args_for(cache, q.data(), out.data(), 1, seq)).ok());
  EXPECT_FLOAT_EQ(out[0], 1.0f);
  EXPECT_FLOAT_EQ(out[1], 10.0f);
  EXPECT_FLOAT_EQ(out[2], 1.5f);
  EXPECT_FLOAT_EQ(out[3], 15.0f);
  EXPECT_FLOAT_EQ(out[4], 2.0f);
  EXPECT_FLOAT_EQ(out[5], 20.0f);
}

TEST(ReferenceAttention, GroupedQueryHeadsReadTheirKvHead) {
  // 4 query heads on 2 KV heads: heads 0-1 read KV head 0, heads 2-3 KV head 1.
  TinyCache cache(1, 2, 1);
  cache.v_at(0, 0, 0) = 3.0f;
  cache.v_at(0, 1, 0) = -7.0f;
  std::vector<float> q(4, 0.5f);
  std::vector<float> out(4, 0.0f);
  AttentionSeq seq{cache.table, 0, 1, 0};
  ReferenceAttention kernel({});
  ASSERT_TRUE(kernel.forward(args_for(cache, q.data(), out.data(), 4, seq)).ok());
  EXPECT_FLOAT_EQ(out[0], 3.0f);
  EXPECT_FLOAT_EQ(out[1], 3.0f);
  EXPECT_FLOAT_EQ(out[2], -7.0f);
  EXPECT_FLOAT_EQ(out[3], -7.0f);
}

TEST(ReferenceAttention, HugeScoresStayFinite) {
  // Scores of +-1e4 overflow exp() unless the max is subtracted first.
  TinyCache cache(2, 1, 1);
  cache.k_at(0, 0, 0) = 100.0f;
  cache.k_at(1, 0, 0) = -100.0f;
  cache.v_at(0, 0, 0) = 2.0f;
  cache.v_at(1, 0, 0) = 5.0f;
  const float q = 100.0f;
  float out = 0.0f;
  AttentionSeq seq{cache.table, 1, 1, 0};
  ReferenceAttention kernel({});
  ASSERT_TRUE(kernel.forward(args_for(cache, &q, &out, 1, seq)).ok());
  EXPECT_FLOAT_EQ(out, 2.0f);
}

TEST(ReferenceAttention, RejectsInconsistentArguments) {
  TinyCache cache(4, 2, 2);
  std::vector<float> q(3 * 2, 0.0f), out(q.size());
  ReferenceAttention kernel({});

  AttentionSeq seq{cache.table, 0, 1, 0};
  AttentionArgs a = args_for(cache, q.data(), out.data(), 3, seq);  // 3 heads on 2 KV heads
  Status st = kernel.forward(a);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("not a multiple"), std::string::npos) << st.message();

  a = args_for(cache, q.data(), out.data(), 2, seq);
  a.head_dim = 4;  // the view says 2
  EXPECT_EQ(kernel.forward(a).code(), StatusCode::invalid_argument);

  AttentionSeq too_long{cache.table, 4, 1, 0};  // 5 positions, one block of 4
  a = args_for(cache, q.data(), out.data(), 2, too_long);
  st = kernel.forward(a);
  EXPECT_EQ(st.code(), StatusCode::invalid_argument);
  EXPECT_NE(st.message().find("block table"), std::string::npos) << st.message();

  const std::vector<int32_t> negative{-1};
  AttentionSeq bad_table{negative, 0, 1, 0};
  EXPECT_EQ(kernel.forward(args_for(cache, q.data(), out.data(), 2, bad_table)).code(),
            StatusCode::invalid_argument);

  AttentionSeq negative_past{cache.table, -1, 1, 0};
  EXPECT_EQ(kernel.forward(args_for(cache, q.data(), out.data(), 2, negative_past)).code(),
            StatusCode::invalid_argument);

  a = args_for(cache, nullptr, out.data(), 2, seq);
  EXPECT_EQ(kernel.forward(a).code(), StatusCode::invalid_argument);

  a = args_for(cache, q.data(), out.data(), 2, seq);
  a.scale = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kernel.forward(a).code(), StatusCode::invalid_argument);

  AttentionSeq empty{{}, 0, 0, 0};  // no queries: nothing to read, nothing to check
  EXPECT_TRUE(kernel.forward(args_for(cache, nullptr, nullptr, 2, empty)).ok());
}

TEST(ReferenceAttention, BuiltLibraryLoadsAndDescribesThePlugin) {
  test::LoadedLibrary loaded = test::load_built_plugin("libtessera_attention_reference.so");
  ASSERT_NE(loaded.entry, nullptr);
  const PluginInfo& info = test::expect_single_plugin(loaded.entry, PluginFamily::attention, "reference");
  std::string error;
  std::unique_ptr<PluginObject> object(info.create(test::default_params(info), &error));
  EXPECT_NE(object, nullptr) << error;
}

}  // namespace
}  // namespace tessera::plugins
