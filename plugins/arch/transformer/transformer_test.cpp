// Forward-pass tests: the plugin's batched model against the naive reference
// and against itself run in other batch shapes.
#include <gtest/gtest.h>

#include "transformer_harness_testing.hpp"

namespace tessera::transformer::testing {
namespace {

// Prefill of n tokens with all_logits, token-by-token decode, and the reference
// must agree on every position's logits.
void check_prefill_decode_reference(const TinySpec& spec, size_t n_tokens, int32_t block_size = 0) {
  const auto tokens = random_tokens(n_tokens, spec.vocab, spec.seed + 7);

  Harness prefill(spec, block_size);
  ASSERT_TRUE(prefill.ok());
  const SeqId a = prefill.new_sequence();
  const Rows prefill_rows = prefill.step({{a, tokens, true}})[0];

  Harness decode(spec, block_size);
  ASSERT_TRUE(decode.ok());
  const SeqId b = decode.new_sequence();
  Rows decode_rows;
  for (int32_t t : tokens) decode_rows.push_back(decode.step({{b, {t}, false}})[0][0]);

  ReferenceTransformer reference(prefill.weights());
  const Rows expected = reference.run(tokens);

  expect_rows_close(prefill_rows, expected, "prefill vs reference");
  expect_rows_close(decode_rows, expected, "decode vs reference");
  expect_rows_close(prefill_rows, decode_rows, "prefill vs decode");
}

TEST(TransformerForward, PrefillEqualsTokenByTokenDecodeAndReference) {
  check_prefill_decode_reference(TinySpec{}, 12);
}

TEST(TransformerForward, DecodeRunsQkvAndGateUpThroughOneSharedRegionEach) {
  // Q/K/V and gate/up read the same input: a decode step prepares those five
  // Linears of every layer (tessera/linear.hpp split) instead of calling their
  // forward(); PrefillEqualsTokenByTokenDecodeAndReference checks the values.
  const TinySpec spec;
  Harness h(spec);
  ASSERT_TRUE(h.ok());
  const SeqId s = h.new_sequence();
  h.step({{s, random_tokens(5, spec.vocab, 2), false}});
  const int64_t before = PlainLinear::prepare_calls.load();
  h.step({{s, {3}, false}});
  EXPECT_EQ(PlainLinear::prepare_calls.load() - before, 5 * spec.n_layer);
}

TEST(TransformerForward, LastTokenLogitsOnlyWhenAllLogitsIsOff) {
  const TinySpec spec;
  const auto tokens = random_tokens(9, spec.vocab, 3);
  Harness h(spec);
  ASSERT_TRUE(h.ok());
  const Rows rows = h.step({{h.new_sequence(), tokens, false}})[0];
  ReferenceTransformer reference(h.weights());
  const Rows expected = reference.run(tokens);
  ASSERT_EQ(rows.size(), 1u);
  expect_close(rows[0], expected.back(), "last-token logits");
}

// Three sequences of different lengths, prefilling and decoding in shared
// batches (token layout reversed against seqs order), match each run alone.
class TransformerBatch : public ::testing::TestWithParam<int32_t> {};

TEST_P(TransformerBatch, ThreeSequencesEqualEachRunAlone) {
  const TinySpec spec;
  const int32_t block_size = GetParam();
  const std::vector<std::vector<int32_t>> prompts = {
      random_tokens(7, spec.vocab, 11), random_tokens(3, spec.vocab, 12), random_tokens(12, spec.vocab, 13)};
  const std::vector<std::vector<int32_t>> second = {{4}, {5, 6}, {7}};
  const std::vector<std::vector<int32_t>> third = {{8}, {9}, {10, 11, 12}};
  const std::vector<std::vector<bool>> all_logits = {{true, false, false}, {false, true, false}, {false, false, true}};
  const std::vector<std::vector<std::vector<int32_t>>> steps = {prompts, second, third};

  Harness together(spec, block_size);
  ASSERT_TRUE(together.ok());
  std::vector<SeqId> ids;
  for (int i = 0; i < 3; ++i) ids.push_back(together.new_sequence());
  std::vector<std::vector<Rows>> batched;  // [step][seq] rows
  for (size_t s = 0; s < steps.size(); ++s) {
    std::vector<Chunk> chunks;
    for (size_t q = 0; q < 3; ++q) chunks.push_back({ids[q], steps[s][q], all_logits[s][q]});
    batched.push_back(together.step(chunks, /*reverse_layout=*/s != 1));
  }

  for (size_t q = 0; q < 3; ++q) {
    Harness alone(spec, block_size);
    ASSERT_TRUE(alone.ok());
    const SeqId id = alone.new_sequence();
    ReferenceTransformer reference(alone.weights());
    for (size_t s = 0; s < steps.size(); ++s) {
      const Rows rows = alone.step({{id, steps[s][q], all_logits[s][q]}})[0];
      const std::string what = "seq " + std::to_string(q) + " step " + std::to_string(s);
      expect_rows_close(batched[s][q], rows, what + " batched vs alone");
      Rows expected = reference.run(steps[s][q]);
      if (!all_logits[s][q]) expected = {expected.back()};
      expect_rows_close(rows, expected, what + " alone vs reference");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CacheLayouts, TransformerBatch, ::testing::Values(0, 4, 5),
                         [](const auto& info) {
                           return info.param == 0 ? std::string("contiguous")
                                                  : "paged_block" + std::to_string(info.param);
                         });

// RoPE pairing and scaling variants against the reference's own formulas.
struct RopeCase {
  const char* name;
  RopeStyle style;
  RopeScaling scaling;
  double factor;
};

class TransformerRope : public ::testing::TestWithParam<RopeCase> {};

TEST_P(TransformerRope, MatchesReference) {
  TinySpec spec;
  spec.arch = GetParam().style == RopeStyle::neox ? "qwen2" : "llama";  // GGUF: the architecture decides
  spec.rope_scaling = GetParam().scaling;
  spec.rope_factor = GetParam().factor;
  // head_dim 16, base 500: wavelengths 6.3, 13.7, 29.8, 64.9, 141, ... With an
  // original context of 64 (thresholds 16 and 64) the llama3 rule keeps the
  // first two frequencies, blends the third and scales the rest. The low base
  // makes the low frequencies turn visibly within 20 positions.
  spec.rope_original_context = 64;
  spec.rope_freq_base = 500.0;
  check_prefill_decode_reference(spec, 20);
}

INSTANTIATE_TEST_SUITE_P(
    Variants, TransformerRope,
    ::testing::Values(RopeCase{"adjacent", RopeStyle::adjacent, RopeScaling::none, 1.0},
                      RopeCase{"neox", RopeStyle::neox, RopeScaling::none, 1.0},
                      RopeCase{"adjacent_linear", RopeStyle::adjacent, RopeScaling::linear, 4.0},
                      RopeCase{"neox_linear", RopeStyle::neox, RopeScaling::linear, 4.0},
                      RopeCase{"adjacent_llama3", RopeStyle::adjacent, RopeScaling::llama3, 8.0},
                      RopeCase{"neox_llama3", RopeStyle::neox, RopeScaling::llama3, 8.0}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(TransformerRope, StylesGiveDifferentLogits) {
  // Guards the test above against a reference that ignores the style.
  TinySpec adjacent, neox;
  neox.arch = "qwen2";  // split-halves RoPE
  const auto tokens = random_tokens(6, adjacent.vocab, 5);
  Harness a(adjacent), b(neox);
  ASSERT_TRUE(a.ok() && b.ok());
  const Rows ra = a.step({{a.new_sequence(), tokens, false}})[0];
  const Rows rb = b.step({{b.new_sequence(), tokens, false}})[0];
  float max_diff = 0.0f;
  for (size_t i = 0; i < ra[0].size(); ++i) max_diff = std::max(max_diff, std::fabs(ra[0][i] - rb[0][i]));
  EXPECT_GT(max_diff, 1e-3f);
}

class TransformerGqa : public ::testing::TestWithParam<int64_t> {};

TEST_P(TransformerGqa, KvHeadCountsMatchReference) {
  TinySpec spec;
  spec.n_kv_head = GetParam();
  check_prefill_decode_reference(spec, 10, 4);
}

INSTANTIATE_TEST_SUITE_P(HeadGroups, TransformerGqa, ::testing::Values(4, 2, 1),
                         [](const auto& info) { return "kv_heads_" + std::to_string(info.param); });

TEST(TransformerForward, HeadDimIndependentOfEmbeddingWidth) {
  TinySpec spec;
  spec.head_dim = 8;  // q width 4 * 8 = 32, not n_embd 64
  check_prefill_decode_reference(spec, 8);
}

TEST(TransformerForward, TiedOutputUsesTokenEmbedding) {
  TinySpec spec;
  spec.tied = true;
  check_prefill_decode_reference(spec, 8);
}

TEST(TransformerForward, UntiedOutputUsesOutputWeight) {
  TinySpec spec;
  spec.tied = false;
  check_prefill_decode_reference(spec, 8);
}

TEST(TransformerForward, Qwen2StyleQkvBias) {
  TinySpec spec;
  spec.arch = "qwen2";
  spec.qkv_bias = true;
  check_prefill_decode_reference(spec, 10, 4);
}

TEST(TransformerForward, ThreeLayersPagedCache) {
  TinySpec spec;
  spec.n_layer = 3;
  spec.seed = 99;
  check_prefill_decode_reference(spec, 17, 3);
}

TEST(TransformerModel, StateSpecAndWeightBytes) {
  TinySpec spec;
  Harness h(spec);
  ASSERT_TRUE(h.ok());
  const SequenceStateSpec s = h.model().state_spec();
  ASSERT_EQ(s.n_layer(), 2);
  for (const LayerMemorySpec& l : s.layers) {
    EXPECT_EQ(l.kind, LayerMemoryKind::attention);
    EXPECT_EQ(l.n_kv_head, 2);
    EXPECT_EQ(l.head_dim, 16);
  }
  EXPECT_EQ(s.max_context, 64);
  EXPECT_EQ(s.kv_bytes_per_token(), 2u * 2 * 2 * 16 * 4);
  // Per layer: q 64x64, k 32x64, v 32x64, o 64x64, gate/up 96x64, down 64x96; output 50x64.
  const uint64_t per_layer = (64 * 64 + 32 * 64 * 2 + 64 * 64 + 96 * 64 * 3) * 4;
  EXPECT_EQ(h.model().weight_bytes(), 2 * per_layer + 50 * 64 * 4);
  EXPECT_EQ(h.model().vocab_size(), 50);
}

// ABI 3.6: the forward cut between layers. Layers run in two calls on two
// fresh sequences (the second only needs its own layers' K/V) give the bits
// of all layers in one call; ranges outside the model and tokens outside the
// vocabulary are refused.
TEST(TransformerModel, LayersRunOneRangeAtATimeGiveTheBitsOfOneCall) {
  TinySpec spec;
  spec.n_layer = 3;
  Harness h(spec);
  ASSERT_TRUE(h.ok());
  Model& model = h.model();
  ASSERT_EQ(model.layer_count(), 3);
  ASSERT_EQ(model.hidden_size(), spec.n_embd);
  const auto tokens = random_tokens(9, spec.vocab, 5);
  const auto n = static_cast<int32_t>(tokens.size());
  auto run = [&](int32_t first, int32_t last, std::vector<float>& hidden) {
    const SeqId seq = h.new_sequence();
    EXPECT_TRUE(h.cache().append_slots(seq, n).ok());
    const BatchSeq bs{seq, 0, n, 0, /*n_logits=*/0};
    const Status st = model.forward_layers(Batch{tokens, std::span<const BatchSeq>(&bs, 1)}, h.cache(), first, last,
                                           hidden.data());
    h.cache().release(seq);
    return st;
  };
  std::vector<float> embedded(static_cast<size_t>(n * spec.n_embd));
  ASSERT_TRUE(model.embed(tokens, embedded.data()).ok());

  std::vector<float> whole = embedded;
  ASSERT_TRUE(run(0, 3, whole).ok());
  std::vector<float> split = embedded;
  ASSERT_TRUE(run(0, 1, split).ok());
  ASSERT_TRUE(run(1, 3, split).ok());
  EXPECT_EQ(split, whole);
  EXPECT_NE(whole, embedded);
  std::vector<float> none = embedded;
  ASSERT_TRUE(run(2, 2, none).ok());  // an empty range changes nothing
  EXPECT_EQ(none, embedded);

  EXPECT_EQ(run(2, 1, none).code(), StatusCode::invalid_argument);
  EXPECT_EQ(run(0, 4, none).code(), StatusCode::invalid_argument);
  EXPECT_EQ(run(-1, 1, none).code(), StatusCode::invalid_argument);
  const std::vector<int32_t> outside = {static_cast<int32_t>(spec.vocab)};
  EXPECT_FALSE(model.embed(outside, embedded.data()).ok());
}

TEST(TransformerModel, AttentionKernelCalledOncePerLayer) {
  TinySpec spec;
  Harness h(spec);
  ASSERT_TRUE(h.ok());
  PlainAttention& attention = h.attention();
  const int before = attention.calls;
  h.step({{h.new_sequence(), {1, 2, 3}, false}, {h.new_sequence(), {4}, false}});
  EXPECT_EQ(attention.calls - before, 2);
}

// Token embeddings in every storage the plugin reads: plain formats in place
// (no builder call), block formats dequantized through the builder at build time.
struct EmbeddingCase {
  const char* name;
  DType dtype;
  bool row_decoders;  // the builder offers them (the core's does)
  bool decoded;       // rows decoded on lookup (a block format with decoders)
  bool via_builder;   // an f32 copy made at build time through dequantize_rows
};

class TransformerEmbedding : public ::testing::TestWithParam<EmbeddingCase> {};

TEST_P(TransformerEmbedding, StorageFormatsMatchReference) {
  const EmbeddingCase c = GetParam();
  const TinySpec spec;  // untied: the fake PlainLinear reads f32 only
  const auto tokens = random_tokens(6, spec.vocab, 21);
  Harness h(spec, 0, [&](FakeWeightStore& w) {
    w.store_as("token_embd.weight", c.dtype);
    w.row_decoders = c.row_decoders;
  });
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h.builder().dequantize_rows_calls > 0, c.via_builder);
  EXPECT_EQ(h.builder().row_decoders_made, c.decoded ? 1 : 0);
  const Rows rows = h.step({{h.new_sequence(), tokens, true}})[0];
  ReferenceTransformer reference(h.weights());
  expect_rows_close(rows, reference.run(tokens), c.name);
}

INSTANTIATE_TEST_SUITE_P(Storage, TransformerEmbedding,
                         ::testing::Values(EmbeddingCase{"f32", DType::f32, true, false, false},
                                           EmbeddingCase{"f16", DType::f16, true, false, false},
                                           EmbeddingCase{"bf16", DType::bf16, true, false, false},
                                           EmbeddingCase{"q8_0", DType::q8_0, true, true, false},
                                           EmbeddingCase{"q8_0_without_decoders", DType::q8_0, false, false, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tessera::transformer::testing
