// Errors: a model whose tensors or hyper-parameters do not fit is refused at
// build time with a message naming the culprit; a bad batch is refused by
// forward() with a Status, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "transformer_harness_testing.hpp"
#include "tessera/plugin.hpp"

const tessera::PluginLibrary* tessera_transformer_entry();

namespace tessera::transformer::testing {
namespace {

Status build_status(FakeWeightStore& store) {
  PlainAttention attention;
  FakeBuilder builder(store, attention);
  auto built = build_transformer(builder);
  return built.ok() ? Status::Ok() : built.status();
}

void expect_error(FakeWeightStore& store, StatusCode code, std::initializer_list<const char*> fragments) {
  const Status st = build_status(store);
  ASSERT_FALSE(st.ok()) << "build unexpectedly succeeded";
  EXPECT_EQ(st.code(), code) << st.message();
  for (const char* f : fragments) EXPECT_NE(st.message().find(f), std::string::npos) << "'" << f << "' not in: " << st.message();
}

TEST(TransformerBuild, WrongProjectionShapeNamesTensorAndBothShapes) {
  auto store = make_tiny_model(TinySpec{});
  store->reshape("blk.1.attn_k.weight", {16, 64});
  expect_error(*store, StatusCode::invalid_argument,
               {"tiny-test-model.gguf", "blk.1.attn_k.weight", "[16, 64]", "[32, 64]"});
}

TEST(TransformerBuild, TransposedDownProjectionIsRefused) {
  auto store = make_tiny_model(TinySpec{});
  store->reshape("blk.0.ffn_down.weight", {96, 64});
  expect_error(*store, StatusCode::invalid_argument, {"blk.0.ffn_down.weight", "[96, 64]", "[64, 96]"});
}

TEST(TransformerBuild, MissingTensorIsNotFound) {
  auto store = make_tiny_model(TinySpec{});
  store->remove("blk.1.ffn_up.weight");
  expect_error(*store, StatusCode::not_found, {"blk.1.ffn_up.weight", "missing", "[96, 64]"});
}

TEST(TransformerBuild, WrongOutputAndEmbeddingShapes) {
  auto store = make_tiny_model(TinySpec{});
  store->reshape("output.weight", {51, 64});
  expect_error(*store, StatusCode::invalid_argument, {"output.weight", "[51, 64]", "[50, 64]"});

  store = make_tiny_model(TinySpec{});
  store->reshape("token_embd.weight", {50, 63});
  expect_error(*store, StatusCode::invalid_argument, {"token_embd.weight", "[50, 63]", "[50, 64]"});

  store = make_tiny_model(TinySpec{});
  store->reshape("output_norm.weight", {32});
  expect_error(*store, StatusCode::invalid_argument, {"output_norm.weight", "[32]", "[64]"});
}

TEST(TransformerBuild, WrongBiasShape) {
  TinySpec spec;
  spec.qkv_bias = true;
  auto store = make_tiny_model(spec);
  store->reshape("blk.0.attn_v.bias", {64});
  expect_error(*store, StatusCode::invalid_argument, {"blk.0.attn_v.bias", "[64]", "[32]"});
}

TEST(TransformerBuild, InconsistentHyperParameters) {
  auto store = make_tiny_model(TinySpec{});
  store->mutable_metadata().set("llama.attention.head_count_kv", int64_t{3});
  expect_error(*store, StatusCode::corrupt_data, {"head_count 4", "head_count_kv 3"});

  store = make_tiny_model(TinySpec{});
  store->mutable_metadata().set("llama.block_count", int64_t{0});
  expect_error(*store, StatusCode::corrupt_data, {"block_count", "positive"});

  store = make_tiny_model(TinySpec{});
  store->mutable_metadata().set("llama.block_count", int64_t{3});  // the file holds two layers
  expect_error(*store, StatusCode::not_found, {"blk.2.attn_norm.weight"});

  store = make_tiny_model(TinySpec{});
  store->mutable_metadata().set("llama.feed_forward_length", int64_t{1} << 40);
  expect_error(*store, StatusCode::corrupt_data, {"feed_forward_length"});
}

TEST(TransformerBuild, VocabSizeFromEmbeddingWhenAbsent) {
  auto store = make_tiny_model(TinySpec{});
  store->mutable_metadata().erase("llama.vocab_size");
  PlainAttention attention;
  FakeBuilder builder(*store, attention);
  auto built = build_transformer(builder);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built.value()->vocab_size(), 50);
}

TEST(TransformerBuild, UnservedArchitectureAndRopeScaling) {
  TinySpec spec;
  spec.arch = "gemma";
  auto store = make_tiny_model(spec);
  expect_error(*store, StatusCode::unsupported, {"gemma", "transformer"});

  spec = TinySpec{};
  spec.rope_scaling = RopeScaling::yarn;
  store = make_tiny_model(spec);
  expect_error(*store, StatusCode::unsupported, {"YaRN"});
}

TEST(TransformerBuild, ServedArchitectureNames) {
  for (const char* arch : {"llama", "mistral", "qwen2", "smollm"}) {
    TinySpec spec;
    spec.arch = arch;
    auto store = make_tiny_model(spec);
    EXPECT_TRUE(build_status(*store).ok()) << arch;
  }
}

// ---- forward() errors -------------------------------------------------------

class TransformerForwardErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(h_.ok());
    seq_ = h_.new_sequence();
    logits_.assign(16 * 50, 0.0f);
  }
  Status run(const std::vector<int32_t>& tokens, const std::vector<BatchSeq>& seqs) {
    return h_.model().forward(Batch{tokens, seqs}, h_.cache(), logits_.data());
  }
  void expect_refused(const Status& st, const char* fragment) {
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.code(), StatusCode::invalid_argument) << st.message();
    EXPECT_NE(st.message().find(fragment), std::string::npos) << st.message();
  }
  Harness h_{TinySpec{}};
  SeqId seq_ = 0;
  std::vector<float> logits_;
};

TEST_F(TransformerForwardErrors, TokenOutsideVocabulary) {
  ASSERT_TRUE(h_.cache().append_slots(seq_, 2).ok());
  expect_refused(run({1, 50}, {{seq_, 0, 2, 0, 1}}), "vocabulary");
  expect_refused(run({-1, 3}, {{seq_, 0, 2, 0, 1}}), "vocabulary");
}

TEST_F(TransformerForwardErrors, SlotsNotReserved) {
  ASSERT_TRUE(h_.cache().append_slots(seq_, 1).ok());
  expect_refused(run({1, 2}, {{seq_, 0, 2, 0, 1}}), "append_slots");
}

TEST_F(TransformerForwardErrors, RowsOutsideOrOverlappingOrUncovered) {
  const SeqId other = h_.new_sequence();
  ASSERT_TRUE(h_.cache().append_slots(seq_, 3).ok());
  ASSERT_TRUE(h_.cache().append_slots(other, 3).ok());
  expect_refused(run({1, 2, 3}, {{seq_, 1, 3, 0, 1}}), "outside the batch");
  expect_refused(run({1, 2, 3}, {{seq_, 0, 2, 0, 1}, {other, 1, 2, 0, 1}}), "two sequences");
  expect_refused(run({1, 2, 3}, {{seq_, 0, 2, 0, 1}}), "no sequence");
  expect_refused(run({1, 2, 3}, {{seq_, 0, 2, 0, 1}, {seq_, 2, 1, 2, 1}}), "twice");
  expect_refused(run({1, 2, 3}, {{seq_, 0, 0, 0, 1}, {other, 0, 3, 0, 1}}), "0 tokens");
  expect_refused(run({1, 2, 3}, {{seq_, 0, 3, 0, 4}}), "asks logits for 4 of its 3 tokens");
  expect_refused(run({1, 2, 3}, {{seq_, 0, 3, 0, -1}}), "asks logits for -1");
}

TEST_F(TransformerForwardErrors, BeyondContextAndEmptyBatch) {
  ASSERT_TRUE(h_.cache().append_slots(seq_, 64).ok());
  expect_refused(run({1, 2}, {{seq_, 0, 2, 63, 1}}), "context of 64");
  expect_refused(run({}, {}), "empty batch");
}

TEST(TransformerForwardCache, CacheConfiguredForAnotherModel) {
  Harness h(TinySpec{});
  ASSERT_TRUE(h.ok());
  TestKvCache wrong(64, 2);
  SequenceStateSpec spec = h.model().state_spec();
  const std::vector<LayerMemorySpec> other_layers(spec.layers.size(), LayerMemorySpec::attention(4, 16));
  spec.layers = other_layers;
  ASSERT_TRUE(wrong.configure(spec).ok());
  const SeqId s = wrong.create_sequence().value();
  ASSERT_TRUE(wrong.append_slots(s, 1).ok());
  std::vector<float> logits(50);
  const std::vector<int32_t> tokens = {1};
  const std::vector<BatchSeq> seqs = {{s, 0, 1, 0, 1}};
  const Status st = h.model().forward(Batch{tokens, seqs}, wrong, logits.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("KV heads"), std::string::npos) << st.message();
}

// A cache whose attention pools report blocks of 0 rows is refused; a block
// size of 0 no longer stands for "a model without attention layers"
// (blocks::BatchLimits::attention_layers says that).
TEST(TransformerForwardCache, BlocksOfZeroRowsAreRefused) {
  Harness h(TinySpec{});
  ASSERT_TRUE(h.ok());
  TestKvCache zero_rows(0, 2);
  ASSERT_TRUE(zero_rows.configure(h.model().state_spec()).ok());
  const SeqId s = zero_rows.create_sequence().value();
  std::vector<float> logits(50);
  const std::vector<int32_t> tokens = {1};
  const std::vector<BatchSeq> seqs = {{s, 0, 1, 0, 1}};
  const Status st = h.model().forward(Batch{tokens, seqs}, zero_rows, logits.data());
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("block size 0"), std::string::npos) << st.message();
}

// ---- plugin entry -------------------------------------------------------------

TEST(TransformerPlugin, EntryDescribesOneArchitecturePlugin) {
  const PluginLibrary* lib = tessera_transformer_entry();
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(lib->abi_major, kAbiMajor);
  ASSERT_EQ(lib->plugin_count, 1u);
  const PluginInfo& info = lib->plugins[0];
  EXPECT_EQ(info.family, PluginFamily::architecture);
  EXPECT_STREQ(info.name, "transformer");
  std::string error;
  std::unique_ptr<PluginObject> obj(info.create(ParamValues{}, &error));
  ASSERT_NE(obj, nullptr) << error;
  auto* arch = static_cast<Architecture*>(obj.get());
  const auto supported = arch->supported();
  EXPECT_EQ(std::vector<std::string_view>(supported.begin(), supported.end()),
            (std::vector<std::string_view>{"llama", "mistral", "qwen2", "smollm", "LlamaForCausalLM",
                                           "MistralForCausalLM", "Qwen2ForCausalLM"}));

  auto store = make_tiny_model(TinySpec{});
  PlainAttention attention;
  FakeBuilder builder(*store, attention);
  auto built = arch->build(builder);
  ASSERT_TRUE(built.ok()) << built.status().message();
  EXPECT_EQ(built.value()->state_spec().n_layer(), 2);
  EXPECT_EQ(builder.attention_requests, 1) << "the model asks for its attention kernel once";

  std::vector<HyperParameter> hparams;
  ASSERT_TRUE(arch->describe(*store, hparams).ok());
  auto value = [&](const std::string& name) -> std::string {
    for (const auto& h : hparams)
      if (h.name == name) return std::visit([](const auto& v) {
        if constexpr (std::is_same_v<std::decay_t<decltype(v)>, std::string>) return v;
        else return std::to_string(v);
      }, h.value);
    return "absent";
  };
  EXPECT_EQ(value("block_count"), "2");
  EXPECT_EQ(value("head_dim"), "16") << "derived: embedding_length / head_count";
  EXPECT_EQ(value("rope_style"), "adjacent");
}

}  // namespace
}  // namespace tessera::transformer::testing
