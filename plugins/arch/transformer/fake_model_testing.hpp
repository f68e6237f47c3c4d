// fake_model_testing.hpp: a tiny random f32 Llama-family model and plain, obviously
// correct stand-ins for what the core provides (weight store, builder, Linear,
// attention kernel, KV cache), so the plugin is tested without any other plugin.
#pragma once

#include <atomic>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tessera/architecture.hpp"
#include "tessera/blocks/rope.hpp"
#include "tessera/blocks/testing/map_metadata.hpp"

namespace tessera::transformer::testing {

using blocks::RopeScaling;
using blocks::RopeStyle;

// A tiny model, written as a GGUF file would hold it: the "<arch>.*" keys and
// "blk.N.*" tensors. The RoPE pairing follows the architecture, as in GGUF:
// "qwen2" rotates split halves (neox), "llama" adjacent pairs.
struct TinySpec {
  std::string arch = "llama";
  int64_t n_layer = 2;
  int64_t n_embd = 64;
  int64_t n_head = 4;
  int64_t n_kv_head = 2;
  int64_t head_dim = 0;  // 0: n_embd / n_head
  int64_t n_ff = 96;
  int64_t vocab = 50;
  int64_t context = 64;
  double rope_freq_base = 10000.0;
  RopeScaling rope_scaling = RopeScaling::none;
  double rope_factor = 1.0;
  int64_t rope_original_context = 0;
  double rope_low_freq_factor = 1.0;
  double rope_high_freq_factor = 4.0;
  bool tied = false;      // no output.weight
  bool qkv_bias = false;  // blk.N.attn_{q,k,v}.bias (Qwen2)
  uint64_t seed = 1234;

  RopeStyle rope_style() const { return arch == "qwen2" ? RopeStyle::neox : RopeStyle::adjacent; }
};

// An in-memory WeightStore of f32 tensors.
class FakeWeightStore final : public WeightStore {
 public:
  explicit FakeWeightStore(TinySpec spec) : spec_(std::move(spec)) {}
  ModelFormat format() const noexcept override { return ModelFormat::gguf; }
  std::string_view architecture() const noexcept override { return spec_.arch; }
  const Metadata& metadata() const noexcept override { return metadata_; }
  const TensorRef* find(std::string_view name) const noexcept override;
  std::span<const TensorRef> tensors() const noexcept override { return refs_; }
  const std::string& source() const noexcept override { return source_; }

  // What the model was made from (the reference reads it).
  const TinySpec& spec() const { return spec_; }
  // The file's keys, "<arch>.block_count" and so on; tests change them.
  blocks::testing::MapMetadata& mutable_metadata() { return metadata_; }
  void add(const std::string& name, std::vector<int64_t> shape, std::vector<float> values);
  void remove(const std::string& name) {
    entries_.erase(name);
    index();
  }
  // Replaces a tensor by a random one of another shape (for mismatch tests).
  void reshape(const std::string& name, std::vector<int64_t> shape);
  // Re-stores a tensor as f16 or bf16 (its values rounded accordingly, so the
  // reference sees the same numbers), or labels it with a block format whose
  // bytes only the fake builder can "dequantize" (it serves the f32 values).
  void store_as(const std::string& name, DType dtype);
  // f32 values of a tensor; throws if absent.
  const std::vector<float>& values(const std::string& name) const;
  bool has(const std::string& name) const { return entries_.count(name) != 0; }
  // Whether the fake builder over this store offers row decoders (the core's
  // does from ABI 2.1); false tests the fallback of a builder without them.
  bool row_decoders = true;

 private:
  struct Entry {
    TensorRef ref;
    std::vector<float> values;     // the tensor's values as f32
    std::vector<uint16_t> halves;  // its f16/bf16 storage, when stored so
  };
  void index();  // refs_ from entries_, after each change

  TinySpec spec_;
  blocks::testing::MapMetadata metadata_;
  std::map<std::string, Entry, std::less<>> entries_;
  std::vector<TensorRef> refs_;  // entries_' refs, in name order
  std::string source_ = "tiny-test-model.gguf";
};

std::unique_ptr<FakeWeightStore> make_tiny_model(const TinySpec& spec);

// y = x·Wᵀ + b with plain loops over f32 weights.
class PlainLinear final : public Linear {
 public:
  PlainLinear(const TensorRef& weight, const TensorRef* bias);
  int64_t in_features() const noexcept override { return in_; }
  int64_t out_features() const noexcept override { return out_; }
  Status forward(const float* x, float* y, int64_t n_rows) noexcept override;
  uint64_t weight_bytes() const noexcept override { return static_cast<uint64_t>(in_ * out_) * sizeof(float); }
  // The prepare/compute split too (columns in units of 3, an awkward size on
  // purpose), so the model's shared-input path runs in the tests.
  bool splits() const noexcept override { return true; }
  int64_t column_alignment() const noexcept override { return 3; }
  Status prepare(const float* x, int64_t n_rows) noexcept override;
  void compute(float* y, int64_t begin, int64_t end) noexcept override;
  static inline std::atomic<int64_t> prepare_calls{0};  // over all PlainLinears

 private:
  void columns(const float* x, float* y, int64_t n_rows, int64_t begin, int64_t end) const;
  const float* w_;  // [out, in]
  const float* b_;  // [out] or nullptr
  int64_t in_, out_;
  const float* x_ = nullptr;  // set by prepare()
  int64_t n_rows_ = 0;
};

// Causal softmax attention over block-table views, one query and head at a time.
// Scores are kept in a buffer reserved up front so that the kernel does not
// allocate during decode (the allocation test measures the model alone).
class PlainAttention final : public AttentionKernel {
 public:
  PlainAttention() { scores_.reserve(4096); }
  Status forward(const AttentionArgs& args) noexcept override;
  int calls = 0;

 private:
  std::vector<double> scores_;  // [n_ctx] of one query and head
};

// Like the core's builder, a temporary of model loading: after expire() every
// call fails the test, proving the model no longer needs it.
class FakeBuilder final : public ModelBuilder {
 public:
  FakeBuilder(const FakeWeightStore& weights, AttentionKernel& attention)
      : weights_(weights), attention_(attention) {}
  const WeightStore& weights() const noexcept override { return weights_; }
  Result<std::unique_ptr<Linear>> linear(std::string_view name, std::string_view bias_name) noexcept override;
  Status dequantize(const TensorRef& tensor, float* out) noexcept override;
  Status dequantize_rows(const TensorRef& tensor, int64_t first_row, int64_t n_rows, float* out) noexcept override;
  Result<AttentionKernel*> attention() noexcept override {
    ++attention_requests;
    return &attention_;
  }
  void warn(std::string_view message) noexcept override { warnings.emplace_back(message); }
  // Serves the tensor's f32 values like dequantize_rows, but through an object
  // that stays valid after expire(), as the core's decoders do.
  Result<std::unique_ptr<RowDecoder>> row_decoder(const TensorRef& tensor) noexcept override;

  void expire() { expired_ = true; }
  int dequantize_rows_calls = 0;
  int row_decoders_made = 0;
  int attention_requests = 0;
  std::vector<std::string> warnings;

 private:
  bool used_after_expiry(const char* what) const;
  const FakeWeightStore& weights_;
  AttentionKernel& attention_;
  bool expired_ = false;
};

// A small KV cache: a pool of blocks handed out from a free list in a scrambled
// order, so that block tables are not the identity. block_size = max_context
// gives the contiguous layout (one block per sequence). Attention layers only.
class TestKvCache final : public SequenceMemory {
 public:
  TestKvCache(int32_t block_size, int32_t n_blocks) : block_size_(block_size), n_blocks_(n_blocks) {}
  Status configure(const SequenceStateSpec& spec) noexcept override;
  Result<SeqId> create_sequence() noexcept override;
  void release(SeqId seq) noexcept override;
  Status append_slots(SeqId seq, int32_t n) noexcept override;
  Result<SeqId> fork(SeqId seq) noexcept override;
  Status truncate(SeqId seq, int32_t new_length) noexcept override;
  int32_t length(SeqId seq) const noexcept override;
  std::span<const int32_t> block_table(SeqId seq) const noexcept override;
  KvLayerView layer(int32_t layer) noexcept override;
  RecurrentStateView state(SeqId, int32_t) noexcept override { return {}; }
  int64_t max_sequence_tokens() const noexcept override { return static_cast<int64_t>(n_blocks_) * block_size_; }
  bool can_hold(std::span<const MemoryDemand>) const noexcept override { return true; }
  MemoryStats stats() const noexcept override;
  Result<CheckpointId> checkpoint(SeqId) noexcept override { return Status(Unsupported("test cache")); }
  Status restore(SeqId, CheckpointId) noexcept override { return Unsupported("test cache"); }
  void drop_checkpoint(SeqId, CheckpointId) noexcept override {}

 private:
  struct Sequence {
    int32_t length = 0;
    std::vector<int32_t> blocks;
  };
  int32_t block_size_;
  int32_t n_blocks_;
  int32_t n_kv_head_ = 0, head_dim_ = 0;
  std::vector<std::vector<float>> k_, v_;  // [n_layer][n_blocks * block_size * kv_dim]
  std::vector<int32_t> free_;
  std::map<SeqId, Sequence> seqs_;
  SeqId next_id_ = 0;
};

}  // namespace tessera::transformer::testing
